"""Reading an export file: a memkit JSONL export or a mem0 ``get_all`` JSON.

The objects go to ``Memory.import_``, which validates and writes them.
"""

from __future__ import annotations

import json
from typing import Any


def parse_export(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The memory objects of a memkit JSONL export or a mem0 JSON export, and parse errors."""
    stripped = text.strip()
    if not stripped:
        return [], []
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get("results"), list):
        return [r for r in whole["results"] if isinstance(r, dict)], []
    if isinstance(whole, list):
        return [r for r in whole if isinstance(r, dict)], []
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {number}: not JSON ({exc})")
            continue
        if isinstance(value, dict):
            rows.append(value)
        else:
            errors.append(f"line {number}: expected an object")
    return rows, errors
