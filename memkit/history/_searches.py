"""The search log's table, written once for SQLite and PostgreSQL.

It sits beside the history table (``<history table>_searches``) and holds no
query text unless the caller kept it (``lifecycle.search_log_text``). SQL here
uses ``:name`` parameters; PostgreSQL's module turns them into ``%(name)s``.

A search that read the store before a purge may come to log itself after the purge
deleted the logged searches it concerns. So a search is logged only if none of the ids
it returned has a ``PURGE`` row and its scope has no purge marker at or after the time
the search began (``<history table>_purges``: the scope and time of each scope purge; a
reset's marker has no scope, so it covers every search). The other half is on the
purge's side: writing ``PURGE`` rows deletes the logged searches that returned those
ids, and a scope purge writes its marker with the deletion of the scope's searches;
whichever of the two writes comes second sees the first (SQLite: one writer at a time;
PostgreSQL: a lock, :func:`memkit.history.postgres.search_log_lock`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from memkit._models import SearchLogEntry
from memkit._time import to_datetime, to_iso

COLUMNS = ("id", "timestamp", "query_hash", "query", "k", "result_ids", "latency_ms",
           "user_id", "agent_id", "run_id")
SCOPE_FIELDS = ("user_id", "agent_id", "run_id")
_PARAM = re.compile(r":([a-z_]+)")


def searches_schema(history_table: str) -> list[str]:
    table = f"{history_table}_searches"
    return [
        f'CREATE TABLE IF NOT EXISTS "{table}" (id TEXT PRIMARY KEY, timestamp TEXT NOT NULL,'
        " query_hash TEXT NOT NULL, query TEXT, k INTEGER NOT NULL, result_ids TEXT NOT NULL,"
        " latency_ms REAL NOT NULL, user_id TEXT, agent_id TEXT, run_id TEXT)",
        f'CREATE INDEX IF NOT EXISTS "{table}_time" ON "{table}" (timestamp)',
        f'CREATE TABLE IF NOT EXISTS "{history_table}_purges" (timestamp TEXT NOT NULL,'
        " user_id TEXT, agent_id TEXT, run_id TEXT)",
        f'CREATE INDEX IF NOT EXISTS "{history_table}_purges_time"'
        f' ON "{history_table}_purges" (timestamp)',
    ]


def insert_searches(history_table: str, listed_ids: str) -> str:
    """Log a search unless a purge came after its read (see the module's docstring);
    ``listed_ids``: the dialect's rows of the ids in the JSON array ``:result_ids``."""
    in_scope = " AND ".join(f"(p.{f} IS NULL OR p.{f} = :{f})" for f in SCOPE_FIELDS)
    return (f'INSERT INTO "{history_table}_searches" ({", ".join(COLUMNS)})'
            f" SELECT {', '.join(':' + c for c in COLUMNS)}"
            f' WHERE NOT EXISTS (SELECT 1 FROM "{history_table}" WHERE event = \'PURGE\''
            f" AND memory_id IN ({listed_ids}))"
            f' AND NOT EXISTS (SELECT 1 FROM "{history_table}_purges" AS p'
            f" WHERE p.timestamp >= :timestamp AND {in_scope})")


def insert_purge_marker(history_table: str, scope: Mapping[str, str],
                        purged_at: str) -> tuple[str, dict[str, Any]]:
    """Note that ``scope`` (``{}``: every scope) was purged at ``purged_at``: no search of
    it begun by then is logged any more."""
    values = {"timestamp": to_iso(purged_at), **{f: scope.get(f) for f in SCOPE_FIELDS}}
    return (f'INSERT INTO "{history_table}_purges" ({", ".join(values)})'
            f" VALUES ({', '.join(':' + f for f in values)})", values)


def search_row(entry: SearchLogEntry) -> dict[str, Any]:
    return {**entry.model_dump(include=set(COLUMNS)), "timestamp": to_iso(entry.timestamp),
            "result_ids": json.dumps(entry.result_ids)}


def searches_where(scope: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """The condition "in ``scope``" (each field given must match) on a history or search
    log table, and its parameters."""
    fields = [f for f in SCOPE_FIELDS if f in scope]
    return (" AND ".join(f"{f} = :{f}" for f in fields) or "1 = 1",
            {f: scope[f] for f in fields})


def select_searches(history_table: str, scope: Mapping[str, str],
           limit: int) -> tuple[str, dict[str, Any]]:
    """The newest ``limit`` searches made in ``scope`` (each field given must match)."""
    where, params = searches_where(scope)
    return (f'SELECT {", ".join(COLUMNS)} FROM "{history_table}_searches" WHERE {where}'
            " ORDER BY timestamp DESC, id LIMIT :limit", {**params, "limit": limit})


def search_entry(values: Sequence[Any]) -> SearchLogEntry:
    data = dict(zip(COLUMNS, values, strict=True))
    return SearchLogEntry(**data | {"timestamp": to_datetime(data["timestamp"]),
                                    "result_ids": json.loads(data["result_ids"])})


def pyformat(text: str) -> str:
    """``:name`` parameters as psycopg's ``%(name)s``."""
    return _PARAM.sub(r"%(\1)s", text)
