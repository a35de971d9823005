"""Small helpers shared by the benchmark scripts."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def machine() -> dict[str, Any]:
    """What the figures were measured on, and which commit."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "cpus": os.cpu_count(), "python": platform.python_version(),
        "platform": platform.platform(), "processor": platform.processor() or platform.machine(),
        "commit": commit, "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def write_results(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)
    print(f"wrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [
        "  ".join(_pad(c, w, i) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _pad(text: str, width: int, column: int) -> str:
    return text.ljust(width) if column == 0 else text.rjust(width)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def locomo_sessions(samples: Sequence[dict[str, Any]]) -> list[list[str]]:
    """The turns of each LoCoMo session, session by session, conversation by conversation."""
    from memkit._eval.locomo import entries

    sessions: list[list[str]] = []
    for sample in samples:
        texts: dict[int, list[str]] = {}
        for entry in entries(sample, "turns"):
            texts.setdefault(entry.session, []).append(entry.text)
        sessions.extend(texts.values())
    return sessions
