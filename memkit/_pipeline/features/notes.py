"""Markdown notes as memories: a folder indexed into the scope, chunk by chunk.

Each chunk (:mod:`memkit._notes.markdown`) is a memory written without the LLM,
through the apply flow, with its place in ``metadata``: ``source`` ("notes"),
``path``, ``folder``, ``heading``, ``line_start``, ``line_end`` and
``content_hash``. A file is synchronised in one transaction keyed like the
scope's adds: the chunks it holds are read there, chunks already held (by
content hash) are kept (their lines updated in place when they moved), new
ones are inserted and the rest end (DELETE), so a re-index is idempotent and
concurrent indexers never duplicate a chunk. Vectors are computed before the
transaction; when another writer changed the file's chunks in between so that
a chunk without a vector is needed, the file is synchronised again.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from memkit._errors import ConflictError
from memkit._filters import Condition, Filter, all_of
from memkit._models import AddResult
from memkit._notes.daily_log import append_log, log_lines, log_path
from memkit._notes.markdown import Chunk, FolderSnapshot, read_folder
from memkit._notes.models import IndexResult, SkippedFile
from memkit._pipeline.calls import Handlers, files
from memkit._pipeline.effects import AppendLog, Embed, Flow, ReadNotes, Transaction, WriteFlow, ask
from memkit._pipeline.inputs import Scope, bounded_int, text_hash
from memkit._pipeline.write.apply import apply_flow, history_row, scan
from memkit._pipeline.write.versions import end, valid_at
from memkit._time import after, to_datetime
from memkit.stores.base import Record, Vector, WriteBatch

NOTES_SOURCE = "notes"
MAX_FILE_BYTES_LIMIT = 10_000_000
_ATTEMPTS = 3

NOTE_FILES: Handlers = {
    ReadNotes: lambda e: files(read_folder, e.folder, e.max_file_bytes),
    AppendLog: lambda e: files(append_log, e.path, e.title, e.lines),
}
"""The notes feature's file effects: a folder read, a line appended to the daily log."""


def max_file_bytes_of(value: object) -> int:
    return bounded_int("max_file_bytes", value, MAX_FILE_BYTES_LIMIT)


def _eq(name: str, value: str) -> Condition:
    return Condition(field=name, operator="eq", value=value)


def _location(chunk: Chunk) -> dict[str, Any]:
    return {"heading": chunk.heading, "line_start": chunk.line_start, "line_end": chunk.line_end}


def _holds(record: Record, chunks: dict[str, Chunk]) -> Chunk | None:
    """The chunk ``record`` holds as it is in the file, or None (its section changed or went,
    or its text was changed by hand: the file wins)."""
    chunk = chunks.get(str(record.metadata.get("content_hash")))
    return chunk if chunk is not None and record.hash == text_hash(chunk.text) else None


def _in_place(record: Record, chunk: Chunk) -> bool:
    return all(record.metadata.get(k) == v for k, v in _location(chunk).items())


def _unique(chunks: Iterable[Chunk]) -> dict[str, Chunk]:
    """The chunks by content hash; a text repeated in a file is one memory (its first place)."""
    out: dict[str, Chunk] = {}
    for chunk in chunks:
        out.setdefault(chunk.content_hash, chunk)
    return out


def index_flow(folder: str, scope: Scope, max_file_bytes: int, now: str) -> Flow[IndexResult]:
    """Bring the scope's memories of ``folder`` in line with its markdown files."""
    snapshot: FolderSnapshot = yield from ask(ReadNotes(folder, max_file_bytes))
    result = IndexResult(folder=snapshot.folder, files=len(snapshot.files),
                         skipped=[SkippedFile(path=p, reason=r) for p, r in snapshot.skipped])
    notes = all_of(scope.filter(), _eq("source", NOTES_SOURCE), _eq("folder", snapshot.folder))
    held: dict[str, list[Record]] = {}
    for record in (yield from scan(all_of(notes, valid_at(now)))):
        held.setdefault(str(record.metadata.get("path")), []).append(record)
    wanted = [(f.path, f.chunks) for f in snapshot.files]
    wanted += [(path, ()) for path in sorted(set(held) - {f.path for f in snapshot.files})]
    for path, chunks in wanted:
        records = held.get(path, [])
        unique = _unique(chunks)
        holding = [(r, _holds(r, unique)) for r in records]
        if len(records) == len(unique) == len({c.content_hash for _, c in holding if c}) and all(
                c is not None and _in_place(r, c) for r, c in holding):
            result.unchanged += len(unique)
            continue
        counts = yield from _sync_file(scope, snapshot.folder, path, list(unique.values()), now)
        result.added += counts[0]
        result.moved += counts[1]
        result.removed += counts[2]
        result.unchanged += counts[3]
    return result


def _sync_file(scope: Scope, folder: str, path: str, chunks: Sequence[Chunk],
               now: str) -> Flow[tuple[int, int, int, int]]:
    """(added, moved, removed, unchanged) chunks of one file; retried when a concurrent
    writer made the vectors computed before the transaction insufficient."""
    in_scope = scope.filter()
    of_file = all_of(in_scope, _eq("source", NOTES_SOURCE), _eq("path", path))
    assert in_scope is not None and of_file is not None  # Scope.of requires a scope
    key = in_scope.model_dump_json()  # the key of the scope's adds: they wait for each other
    for _ in range(_ATTEMPTS):
        current = yield from scan(all_of(of_file, valid_at(now)))
        wanted = {c.content_hash: c for c in chunks}
        kept = {c.content_hash for r in current if (c := _holds(r, wanted)) is not None}
        needed = [c for c in chunks if c.content_hash not in kept]
        vectors: dict[str, Vector] = {}
        if needed:
            rows = yield from ask(Embed(tuple(c.text for c in needed)))
            vectors = {c.content_hash: row for c, row in zip(needed, rows, strict=True)}
        counts = yield from ask(Transaction(key, _write(scope, folder, path, of_file, chunks, vectors,
                                                        now)))
        if counts is not None:
            return counts
    raise ConflictError(f"the memories of {path!r} kept changing under other writers; index again")


def _write(scope: Scope, folder: str, path: str, of_file: Filter, chunks: Sequence[Chunk],
           vectors: dict[str, Vector], now: str) -> WriteFlow[tuple[int, int, int, int] | None]:
    current = yield from scan(all_of(of_file, valid_at(now)))
    wanted = {c.content_hash: c for c in chunks}
    kept: dict[str, Record] = {}
    batch = WriteBatch(dedup_scope=of_file, valid_at=now)
    removed = moved = added = 0
    for record in sorted(current, key=lambda r: (r.created_at, r.id)):
        chunk = _holds(record, wanted)
        if chunk is not None and chunk.content_hash not in kept:
            kept[chunk.content_hash] = record
            continue
        batch.updates.append(end(record, now))
        batch.history.append(history_row(record, "DELETE", record.memory, None, now))
        removed += 1
    for digest, chunk in wanted.items():
        held = kept.get(digest)
        if held is None:
            if digest not in vectors:
                return None
            batch.adds.append(_record(scope, folder, path, chunk, vectors[digest], now))
            batch.history.append(history_row(batch.adds[-1], "ADD", None, chunk.text, now))
            added += 1
        elif not _in_place(held, chunk):
            batch.updates.append(replace(held, vector=None, updated_at=after(held.updated_at, now),
                                         metadata={**held.metadata, **_location(chunk)}))
            moved += 1
    if batch.adds or batch.updates:
        yield from apply_flow(batch)
    return added, moved, removed, len(kept) - moved


def _record(scope: Scope, folder: str, path: str, chunk: Chunk, vector: Vector, now: str) -> Record:
    metadata = {"source": NOTES_SOURCE, "path": path, "folder": folder, **_location(chunk),
                "content_hash": chunk.content_hash}
    return Record(id=str(uuid.uuid4()), memory=chunk.text, hash=text_hash(chunk.text),
                  created_at=now, updated_at=now, user_id=scope.user_id, agent_id=scope.agent_id,
                  run_id=scope.run_id, metadata=metadata, vector=vector, valid_from=now,
                  confidence=1.0)


def daily_log_flow(flow: Flow[AddResult], folder: str, now: str) -> Flow[AddResult]:
    """``flow`` (an add), then one line per memory it added, updated or deleted appended to
    the day's log in ``folder``."""
    result = yield from flow
    lines = log_lines(result.results, now)
    if lines:
        day = to_datetime(now).date().isoformat()
        yield AppendLog(log_path(folder, now), f"# {day}\n\nWhat was remembered on {day} (UTC).\n\n",
                        lines)
    return result
