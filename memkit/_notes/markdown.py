"""Markdown files split by heading into chunks, and a folder read into files to index.

A chunk is one section: an ATX heading (``#`` to ``######``) and the lines up to
the next heading, or the lines before the first heading. Headings inside fenced
code blocks do not count. A section whose only line is its heading is left out;
a section longer than :data:`MAX_CHUNK_CHARS` is cut at line boundaries.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from memkit._errors import InvalidArgument

MAX_CHUNK_CHARS = 4_000
"""A longer section becomes several chunks: an embedding model reads only the start of a text."""
DEFAULT_MAX_FILE_BYTES = 100_000
NOTE_SUFFIXES = (".md", ".markdown")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One section of a note: its text, the heading path and the 1-based lines it spans."""

    text: str
    heading: str
    line_start: int
    line_end: int

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class NoteFile:
    """A markdown file of the folder: its absolute path and its chunks."""

    path: str
    chunks: tuple[Chunk, ...]


@dataclass(frozen=True, slots=True)
class FolderSnapshot:
    """What a folder holds now: the files to index and the ones skipped, with why."""

    folder: str
    files: tuple[NoteFile, ...] = ()
    skipped: tuple[tuple[str, str], ...] = field(default_factory=tuple)


def split_markdown(text: str) -> list[Chunk]:
    """The sections of a markdown text, in order."""
    sections: list[tuple[str, int, bool, list[str]]] = []  # heading path, start, has heading
    trail: list[tuple[int, str]] = []  # the open headings: (level, title)
    current: tuple[str, int, bool, list[str]] = ("", 1, False, [])
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
        elif opened:
            fence = opened.group(1)
        elif heading := _HEADING.match(line):
            sections.append(current)
            level, title = len(heading.group(1)), (heading.group(2) or "").strip()
            trail = [(lv, t) for lv, t in trail if lv < level] + [(level, title)]
            current = (" > ".join(t for _, t in trail if t), number, True, [])
        current[3].append(line)
    sections.append(current)
    chunks: list[Chunk] = []
    for path, start, has_heading, body in sections:
        if "".join(body[1:] if has_heading else body).strip():
            chunks.extend(_parts(path, start, body))
    return chunks


def _parts(heading: str, start: int, body: list[str]) -> list[Chunk]:
    """The section as chunks of at most MAX_CHUNK_CHARS, blank edges trimmed."""
    out: list[Chunk] = []
    piece: list[str] = []
    first = start
    size = 0

    def flush() -> None:
        lead = next((i for i, ln in enumerate(piece) if ln.strip()), None)
        if lead is None:
            return
        tail = max(i for i, ln in enumerate(piece) if ln.strip())
        text = "\n".join(piece[lead:tail + 1])
        out.append(Chunk(text, heading, first + lead, first + tail))

    for offset, line in enumerate(body):
        for cut in _cuts(line):
            if piece and size + len(cut) + 1 > MAX_CHUNK_CHARS:
                flush()
                piece, size, first = [], 0, start + offset
            piece.append(cut)
            size += len(cut) + 1
    flush()
    return out


def _cuts(line: str) -> list[str]:
    """A line, cut into pieces a chunk can hold."""
    return [line[i:i + MAX_CHUNK_CHARS] for i in range(0, len(line), MAX_CHUNK_CHARS)] or [""]


def _note_paths(root: Path) -> list[Path]:
    """The markdown files under ``root``, hidden ones and symlinked folders left out, in
    order; folders that cannot be listed are passed over."""
    found: list[Path] = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        found.extend(Path(folder) / name for name in sorted(names)
                     if not name.startswith(".") and name.lower().endswith(NOTE_SUFFIXES))
    return found


def read_folder(folder: str, max_file_bytes: int) -> FolderSnapshot:
    """The markdown files under ``folder`` (hidden files and folders left out), split into
    chunks; files over ``max_file_bytes`` or not UTF-8 are skipped, with the reason."""
    if "\x00" in folder:
        raise InvalidArgument("a folder's path may not hold NUL")
    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        raise InvalidArgument(f"{folder!r} is not a folder")
    files: list[NoteFile] = []
    skipped: list[tuple[str, str]] = []
    for path in _note_paths(root):
        try:
            size = path.stat().st_size
            if size > max_file_bytes:
                skipped.append((str(path), f"{size} bytes, over the limit of {max_file_bytes}"))
                continue
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            skipped.append((str(path), "not UTF-8 text"))
            continue
        except OSError as exc:  # removed or unreadable between the listing and the read
            skipped.append((str(path), f"unreadable ({type(exc).__name__})"))
            continue
        files.append(NoteFile(str(path), tuple(split_markdown(text.replace("\x00", " ")))))
    return FolderSnapshot(str(root), tuple(files), tuple(skipped))
