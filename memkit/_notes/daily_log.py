"""The daily log: what ``add`` remembered, one markdown line per event, in ``YYYY-MM-DD.md``.

Several processes may write one log: the file appears with its title already in
it (a hard link of a finished draft, which fails when another writer was first),
then each line is appended with one ``write`` in append mode, which the
operating system does not interleave with other appends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from memkit._models import MemoryEvent
from memkit._time import to_datetime

_log = logging.getLogger("memkit.notes")


def log_path(folder: str, now: str) -> str:
    """The log file of the day of ``now`` (UTC) in ``folder``."""
    day = to_datetime(now).date().isoformat()
    return str(Path(folder).expanduser() / f"{day}.md")


def log_lines(events: Sequence[MemoryEvent], now: str) -> tuple[str, ...]:
    """One line per ADD, UPDATE or DELETE event: time, event, scope, text."""
    clock = to_datetime(now).strftime("%H:%M:%S")
    lines: list[str] = []
    for event in events:
        if event.event == "NONE":
            continue
        scope = ", ".join(f"{name}={value}" for name, value in (
            ("user_id", event.user_id), ("agent_id", event.agent_id), ("run_id", event.run_id))
            if value is not None)
        if event.event == "UPDATE":
            text = f"{_one_line(event.old_memory)} → {_one_line(event.new_memory)}"
        elif event.event == "DELETE":
            text = _one_line(event.old_memory or event.memory)
        else:
            text = _one_line(event.memory)
        lines.append(f"- {clock} UTC **{event.event}** ({scope}) {text} `{event.id}`\n")
    return tuple(lines)


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())


def append_log(path: str, title: str, lines: Sequence[str]) -> None:
    """Append ``lines`` to ``path``, creating it (and its folder) with ``title`` first. The
    memories are stored by then: a log that cannot be written is a warning, not an error."""
    try:
        _append(Path(path), title, lines)
    except OSError as exc:
        _log.warning("the daily log %s could not be written: %s", path, exc)


def _append(file: Path, title: str, lines: Sequence[str]) -> None:
    if not lines:
        return
    file.parent.mkdir(parents=True, exist_ok=True)
    if not file.exists():  # created whole with its title (a link is atomic), or by another writer
        fd, draft = tempfile.mkstemp(dir=file.parent, prefix=".daily-log-")
        try:
            os.write(fd, title.encode("utf-8"))
            os.close(fd)
            with contextlib.suppress(FileExistsError):
                os.link(draft, file)
        finally:
            os.unlink(draft)
    fd = os.open(file, os.O_WRONLY | os.O_APPEND)
    try:
        for line in lines:
            os.write(fd, line.encode("utf-8", "surrogatepass"))
    finally:
        os.close(fd)
