"""Plain-text and HTML tables for results: ``print(result)`` and notebooks' ``_repr_html_``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape
from typing import Any

Row = Sequence[Any]

MAX_CELL = 80


def cell(value: Any) -> str:
    """One value as table text: times to the second, scores to 3 decimals, None as blank."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def text_table(title: str, columns: Sequence[str], rows: Sequence[Row]) -> str:
    """Aligned columns under a one-line title; long cells are clipped, ids never are."""
    cells = [[_clip(cell(v)) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    lines = [title]
    if cells:
        lines.append("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
        lines.extend("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells)
    return "\n".join(lines)


def html_table(title: str, columns: Sequence[str], rows: Sequence[Row]) -> str:
    """The same table as HTML, for Jupyter and other notebooks."""
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(cell(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    return (f"<table><caption style=\"text-align:left\">{escape(title)}</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
