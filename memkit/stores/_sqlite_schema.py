"""The SQLite store's tables: created when missing, upgraded in place, dropped.

Per collection the file holds ``<tables>_records`` (text, built-in fields,
metadata as JSON), ``<tables>_vectors`` (float32 blobs), ``<tables>_fts`` (an FTS5
index of the text) and ``<tables>_changes`` (a log of the rows whose vector or fields
changed, written by triggers). ``<tables>`` is the collection's name, or ``<name>__g<n>`` after a
re-embedding. ``memkit_collections`` records each collection's dimension, model,
change-log floor, live tables and scrubs (purges that dropped its HNSW index file).
"""

from __future__ import annotations

import sqlite3

from memkit.stores.base import TEMPORAL_FIELDS

META = "memkit_collections"
# columns added to files written before memkit kept versions, then lifecycle fields
ADDED_COLUMNS = {**{k: "TEXT" for k in TEMPORAL_FIELDS}, "memory_type": "TEXT",
                 "importance": "REAL", "confidence": "REAL", "access_count": "INTEGER",
                 "last_accessed_at": "TEXT"}
#: keyword search matches English words by their Porter stem ("paintings" finds "painted");
#: the words of other languages as unicode61 reads them, case- and accent-folded
FTS_TOKENIZER = "porter unicode61"


def create_meta(conn: sqlite3.Connection, collection_name: str) -> str:
    """Create ``memkit_collections`` when missing; the tables the collection lives in
    (those of its last re-embedding, else named after it)."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {META} (name TEXT PRIMARY KEY,"
        " dimension INTEGER NOT NULL, model TEXT NOT NULL,"
        " log_floor INTEGER NOT NULL DEFAULT 0)")
    present = {row[1] for row in conn.execute(f"PRAGMA table_info({META})")}
    if "live" not in present:
        conn.execute(f"ALTER TABLE {META} ADD COLUMN live TEXT")
    if "scrubs" not in present:
        conn.execute(f"ALTER TABLE {META} ADD COLUMN scrubs INTEGER NOT NULL DEFAULT 0")
    row = conn.execute(f"SELECT live FROM {META} WHERE name = ?", (collection_name,)).fetchone()
    return str(row[0]) if row is not None and row[0] else collection_name


def create_tables(conn: sqlite3.Connection, tables: str) -> None:
    """Create a collection's tables, indexes and triggers where missing, and bring those
    of older files up to date."""
    c = tables
    r, v, ch, fts = (f'"{tables}_{kind}"' for kind in ("records", "vectors", "changes", "fts"))
    forget = f"INSERT INTO {fts} ({fts}, rowid, memory) VALUES ('delete', old.seq, old.memory);"
    statements = [
        f"CREATE TABLE IF NOT EXISTS {r} (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
        " id TEXT NOT NULL UNIQUE, memory TEXT NOT NULL, hash TEXT NOT NULL,"
        " created_at TEXT NOT NULL, updated_at TEXT NOT NULL, user_id TEXT, agent_id TEXT,"
        " run_id TEXT, metadata TEXT NOT NULL DEFAULT '{}')",
        *(
            f'CREATE INDEX IF NOT EXISTS "{c}_records_{s}" ON {r} ({s})'
            for s in ("user_id", "agent_id", "run_id")
        ),
        f'CREATE INDEX IF NOT EXISTS "{c}_records_newest" ON {r} (created_at, id)',
        f"CREATE TABLE IF NOT EXISTS {v} (rec INTEGER PRIMARY KEY"
        f" REFERENCES {r} (seq) ON DELETE CASCADE, vector BLOB NOT NULL)",
        f"CREATE TABLE IF NOT EXISTS {ch} (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
        " rec INTEGER NOT NULL)",
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(memory,"
        f" content='{c}_records', content_rowid='seq', tokenize='{FTS_TOKENIZER}')",
        *(
            f'CREATE TRIGGER IF NOT EXISTS "{c}_vectors_{event.lower()}" AFTER {event} ON {v}'
            f" BEGIN INSERT INTO {ch} (rec) VALUES ({row}.rec); END"
            for event, row in (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old"))
        ),
        # a record's fields changed without its vector: the matrix holds some of them too
        f'CREATE TRIGGER IF NOT EXISTS "{c}_records_update" AFTER UPDATE ON {r}'
        f" BEGIN INSERT INTO {ch} (rec) VALUES (new.seq); END",
        f'CREATE TRIGGER IF NOT EXISTS "{c}_fts_insert" AFTER INSERT ON {r}'
        f" BEGIN INSERT INTO {fts} (rowid, memory) VALUES (new.seq, new.memory); END",
        f'CREATE TRIGGER IF NOT EXISTS "{c}_fts_delete" AFTER DELETE ON {r}'
        f" BEGIN {forget} END",
        f'CREATE TRIGGER IF NOT EXISTS "{c}_fts_update" AFTER UPDATE OF memory ON {r}'
        f" BEGIN {forget} INSERT INTO {fts} (rowid, memory) VALUES (new.seq, new.memory); END",
    ]
    made = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (f"{c}_fts",)).fetchone()
    restem = made is not None and FTS_TOKENIZER not in made[0]
    if restem:  # a file written before memkit stemmed: its index is rebuilt once
        conn.execute(f"DROP TABLE {fts}")
    for statement in statements:
        conn.execute(statement)
    if restem:
        conn.execute(f"INSERT INTO {fts} ({fts}) VALUES ('rebuild')")
    # files written before memkit kept versions (or the lifecycle) lack these columns
    present = {row[1] for row in conn.execute(f"PRAGMA table_info({r})")}
    for column, kind in ADDED_COLUMNS.items():
        if column not in present:
            conn.execute(f"ALTER TABLE {r} ADD COLUMN {column} {kind}")
    conn.execute(f'CREATE INDEX IF NOT EXISTS "{c}_records_supersedes" ON {r} (supersedes)')


def drop_tables(conn: sqlite3.Connection, tables: str) -> None:
    """Drop a collection's tables (their indexes and triggers go with them)."""
    for kind in ("fts", "changes", "vectors", "records"):
        conn.execute(f'DROP TABLE IF EXISTS "{tables}_{kind}"')

