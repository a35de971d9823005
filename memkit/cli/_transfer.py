"""Reading an export file (a memkit JSONL export or a mem0 ``get_all`` JSON), or a mem0 store.

The objects go to ``Memory.import_``, which validates and writes them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memkit._errors import ConfigError

if TYPE_CHECKING:
    from memkit import ImportResult, Memory


def import_from_mem0(memory: Memory, config_file: Path, dry_run: bool) -> ImportResult:
    """``memkit import --from-mem0 CONFIG``: the mem0 store a mem0 config file describes."""
    from memkit import import_mem0

    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{config_file}: not JSON ({exc})") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{config_file}: expected a mem0 config object")
    return import_mem0(memory, config, dry_run=dry_run)


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
