"""Reading a mem0 1.0.x store: its vector collection and its history database.

mem0 keeps each memory as one point (Qdrant), one record (Chroma) or one row
(pgvector) whose payload holds the text (``data``), its md5 ``hash``,
``created_at``/``updated_at``, the scope (``user_id``, ``agent_id``,
``run_id``), ``actor_id``/``role`` and the caller's metadata keys beside them.
Its history is a SQLite table ``history`` (``old_memory``, ``new_memory``,
``event``, ``created_at``, ``updated_at``, ``is_deleted``, ``actor_id``,
``role``). :func:`import_mem0` turns both into memkit's export shape and hands
them to ``Memory.import_``, which embeds the texts with memkit's embedder
(mem0's collection does not say which model made its vectors), keeps ids and
times, and skips an id it already holds, so a second run imports nothing.

    >>> import_mem0(memory, {"vector_store": {"provider": "qdrant",
    ...     "config": {"path": "/tmp/qdrant", "on_disk": True}}}, dry_run=True)
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from memkit._errors import ConfigError, VectorStoreError
from memkit._imports import require
from memkit._mem0_config import postgres_dsn
from memkit._models import ImportResult

if TYPE_CHECKING:
    from memkit._memory import Memory

#: payload keys that are the memory itself, not its metadata
_CORE = frozenset({"data", "hash", "created_at", "updated_at", "id", "user_id", "agent_id",
                   "run_id"})
_PAGE = 256


class Mem0ImportResult(ImportResult):
    """What :func:`import_mem0` found in the mem0 store and did with it.

    ``found``: memories in the collection; ``history``: their history rows.
    In a dry run nothing is written: ``imported`` counts the memories whose id
    memkit does not hold yet (an identical text in the same scope would still
    be skipped by the real run) and ``skipped`` those it does.
    """

    found: int = 0
    history: int = 0
    dry_run: bool = False
    imported_ids: list[str] = Field(default_factory=list)


def import_mem0(memory: Memory, mem0_config: Mapping[str, Any] | None = None, *,
                dry_run: bool = False) -> Mem0ImportResult:
    """Copy the memories of the mem0 store ``mem0_config`` describes (mem0's own config
    dict: its ``vector_store`` section and ``history_db_path``; ``None`` is mem0's default
    local Qdrant in ``/tmp/qdrant`` and ``~/.mem0/history.db``) into ``memory``, with their
    ids, scopes, metadata, times and history. Running it again imports nothing new."""
    config = dict(mem0_config or {})
    rows = list(_payloads(config.get("vector_store") or {"provider": "qdrant", "config": {}}))
    history = _history(_history_path(config), [id for id, _ in rows])
    memories = [_memory(id, payload, history.get(id, [])) for id, payload in rows]
    result = Mem0ImportResult(found=len(memories), dry_run=dry_run,
                              history=sum(len(m["history"]) for m in memories))
    if dry_run:
        for item in memories:
            if memory.get(item["id"]) is None:
                result.imported += 1
                result.imported_ids.append(item["id"])
            else:
                result.skipped += 1
        return result
    before = {item["id"] for item in memories if memory.get(item["id"]) is not None}
    report = memory.import_(memories)
    result.imported, result.skipped, result.errors = report.imported, report.skipped, report.errors
    result.imported_ids = [item["id"] for item in memories
                           if item["id"] not in before and memory.get(item["id"]) is not None]
    return result


def _history_path(config: Mapping[str, Any]) -> str:
    path = config.get("history_db_path")
    if path:
        return os.path.expanduser(str(path))
    folder = os.environ.get("MEM0_DIR") or os.path.join(os.path.expanduser("~"), ".mem0")
    return os.path.join(folder, "history.db")


# -- the vector collection ------------------------------------------------------------


def _payloads(section: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every ``(id, payload)`` of the mem0 collection ``section`` names."""
    provider = section.get("provider", "qdrant")
    options = dict(section.get("config") or {})
    name = str(options.get("collection_name") or "mem0")
    try:
        if provider == "qdrant":
            yield from _qdrant(options, name)
        elif provider == "chroma":
            yield from _chroma(options, name)
        elif provider == "pgvector":
            yield from _pgvector(options, name)
        else:
            raise ConfigError(f"cannot read a mem0 {provider!r} store: memkit reads mem0's "
                              "qdrant, chroma and pgvector collections")
    except (ConfigError, ImportError):
        raise
    except Exception as exc:
        raise VectorStoreError(f"reading mem0's {provider} collection {name!r}: {exc}") from exc


def _qdrant(options: Mapping[str, Any], name: str) -> Iterator[tuple[str, dict[str, Any]]]:
    qdrant_client = require("qdrant_client", "qdrant")
    remote = {k: options[k] for k in ("url", "api_key") if options.get(k)}
    if options.get("host") and options.get("port"):
        remote.update(host=options["host"], port=options["port"])
    client = qdrant_client.QdrantClient(
        **(remote or {"path": os.path.expanduser(str(options.get("path") or "/tmp/qdrant"))}))
    try:
        if not client.collection_exists(name):
            raise ConfigError(f"mem0's qdrant store has no collection {name!r}")
        offset = None
        while True:
            points, offset = client.scroll(name, limit=_PAGE, offset=offset, with_payload=True,
                                           with_vectors=False)
            for point in points:
                yield str(point.id), dict(point.payload or {})
            if offset is None:
                return
    finally:
        client.close()


def _chroma(options: Mapping[str, Any], name: str) -> Iterator[tuple[str, dict[str, Any]]]:
    chromadb = require("chromadb", "chroma")
    settings = require("chromadb.config", "chroma").Settings(anonymized_telemetry=False)
    if options.get("host") and options.get("port"):
        client = chromadb.HttpClient(host=options["host"], port=int(options["port"]),
                                     settings=settings)
    else:
        client = chromadb.PersistentClient(path=os.path.expanduser(str(options.get("path") or "db")),
                                           settings=settings)
    collection = client.get_collection(name)
    offset = 0
    while True:
        page = collection.get(include=["metadatas"], limit=_PAGE, offset=offset)
        for id, payload in zip(page["ids"], page["metadatas"], strict=True):
            yield str(id), dict(payload or {})
        if len(page["ids"]) < _PAGE:
            return
        offset += _PAGE


def _pgvector(options: Mapping[str, Any], name: str) -> Iterator[tuple[str, dict[str, Any]]]:
    psycopg = require("psycopg", "pgvector")
    sql = require("psycopg.sql", "pgvector")
    dsn = options.get("connection_string") or postgres_dsn(
        {k: options[k] for k in ("dbname", "user", "password", "host", "port", "sslmode")
         if options.get(k) is not None})
    with psycopg.connect(dsn) as conn:
        query = sql.SQL("SELECT id::text, payload FROM {} ORDER BY id").format(sql.Identifier(name))
        for id, payload in conn.execute(query):
            yield id, payload if isinstance(payload, dict) else json.loads(payload or "{}")


# -- the history database --------------------------------------------------------------


def _history(path: str, ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """mem0's history rows of ``ids``, oldest first; none when the file does not exist."""
    if not ids or not os.path.exists(path):
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        for start in range(0, len(ids), 500):
            rows = conn.execute(
                "SELECT id, memory_id, old_memory, new_memory, event, created_at, updated_at,"
                " is_deleted, actor_id, role FROM history"
                " WHERE memory_id IN (SELECT value FROM json_each(?))"
                " ORDER BY COALESCE(updated_at, created_at), rowid",
                (json.dumps(ids[start:start + 500]),)).fetchall()
            for (id, memory_id, old, new, event, created, updated, deleted, actor,
                 role) in rows:
                out.setdefault(memory_id, []).append({
                    "id": id, "event": event, "old_value": old, "new_value": new,
                    "timestamp": (created if event == "ADD" else updated) or created or updated,
                    "is_deleted": bool(deleted), "actor_id": actor, "role": role})
    except sqlite3.Error as exc:
        raise VectorStoreError(f"reading mem0's history {path}: {exc}") from exc
    finally:
        conn.close()
    return out


def _memory(id: str, payload: Mapping[str, Any], history: list[dict[str, Any]]) -> dict[str, Any]:
    """One mem0 memory in memkit's export shape (``actor_id``/``role`` kept as metadata)."""
    scope = {k: payload.get(k) for k in ("user_id", "agent_id", "run_id")}
    return {
        "id": id, "memory": payload.get("data"), **scope,
        "created_at": payload.get("created_at"),
        "updated_at": payload.get("updated_at") or payload.get("created_at"),
        "metadata": {k: v for k, v in payload.items() if k not in _CORE},
        "history": [{**row, **scope} for row in history],
    }
