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


def _clip(text: str, width: int = MAX_CELL) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def plural(count: int, noun: str) -> str:
    """``"1 event"``, ``"2 events"``, ``"2 memories"``."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {noun[:-1]}ies" if noun.endswith("y") else f"{count} {noun}s"


REPR_WIDTH = 100


def one_line(kind: str, *parts: str, text: str | None = None, **fields: Any) -> str:
    """A repr that fits a terminal line: ``<kind part 'text' key=value ...>``; the text is
    clipped so that the line stays within ``REPR_WIDTH``, and empty fields are left out."""
    tail = "".join(f" {k}={cell(v)}" for k, v in fields.items() if v not in (None, "", {}, []))
    head = " ".join((kind, *parts))
    if text is None:
        return f"<{head}{tail}>"
    room = max(12, REPR_WIDTH - len(head) - len(tail) - 5)
    return f"<{head} {_clip(text.replace(chr(10), ' '), room)!r}{tail}>"


def scope_of(item: Any) -> str | None:
    """``user=alice agent=bot`` style scope, or None when no id is set."""
    parts = [f"{name}={value}" for name, value in (
        ("user", item.user_id), ("agent", item.agent_id), ("run", item.run_id)) if value]
    return " ".join(parts) or None


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
