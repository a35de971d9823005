"""The graph in SQLite: beside the memories in the sqlite store's file, or in a file of its own.

``SQLiteStore.graph()`` (what ``Memory`` uses when the vector store is sqlite
and ``graph_store`` names sqlite without a path) shares the store's connection,
so graph writes made inside the store's transaction commit with the memories.
Traversal is a recursive CTE (:mod:`memkit.graph._sql`).
"""

from __future__ import annotations

import sqlite3
from typing import ClassVar

from memkit.graph._sql import Dialect, Op, Query, Rows, SQLGraph, T
from memkit.graph.base import GraphStore, GraphStoreError
from memkit.history.sqlite import SQLiteConnection, check_identifier
from memkit.stores._ops import run


class SQLiteGraph(GraphStore):
    """``SQLiteGraph("~/.memkit/graph.db")``, or ``SQLiteGraph.on_connection(db, name)``."""

    provider: ClassVar[str] = "sqlite"
    ops: SQLGraph

    def __init__(self, path: str = "~/.memkit/memkit.db", graph_name: str = "memkit") -> None:
        self._init(SQLiteConnection(path), graph_name, owns_connection=True)

    @classmethod
    def on_connection(cls, db: SQLiteConnection, graph_name: str,
                      owner: object = None) -> SQLiteGraph:
        """A graph sharing ``db`` and its transactions with ``owner``, which closes it."""
        graph = cls.__new__(cls)
        graph._init(db, graph_name, owns_connection=False)
        graph._owner = owner
        return graph

    def _init(self, db: SQLiteConnection, name: str, *, owns_connection: bool) -> None:
        self._db = db
        self.ops = SQLGraph(check_identifier(name, "graph name"), Dialect("sqlite"))
        self._owns_connection = owns_connection
        self._owner: object = None
        self._ready = False

    @property
    def path(self) -> str:
        """The SQLite file the graph is in."""
        return self._db.path

    def joins(self, store: object) -> bool:
        """True for the store this graph was made by (``SQLiteStore.graph()``): one connection,
        so a write inside the store's ``BEGIN IMMEDIATE`` transaction is part of it."""
        return self._owner is not None and store is self._owner

    def _run(self, op: Op[T]) -> T:
        """In one transaction: the store's, when the sqlite store's transaction is open."""
        try:
            with self._db.write() as conn:
                if not self._ready:
                    _drive(conn, self.ops.schema())
                    self._ready = True
                return _drive(conn, op)
        except sqlite3.Error as exc:
            raise GraphStoreError(f"SQLite: {exc}") from exc

    def scrub(self) -> None:
        self._db.checkpoint()

    def close(self) -> None:
        if self._owns_connection:
            self._db.close()


def _drive(conn: sqlite3.Connection, op: Op[T]) -> T:
    def execute(query: Query) -> Rows:
        if query.many is not None:
            conn.executemany(query.sql, query.many)
            return []
        return conn.execute(query.sql, query.params).fetchall()

    return run(op, execute)


__all__ = ["SQLiteGraph"]
