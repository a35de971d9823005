"""One memory shared by several processes: what holds across the process boundary.

Each test starts real processes (``spawn``: a fresh interpreter, as a second agent
worker or a second server would be), each with threads of its own, all on one
collection. A hang fails the test (``pytest.mark.timeout``) instead of stalling it.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from memkit import Memory
from memkit._postgres import advisory_key
from memkit.history.base import HistoryStore
from memkit.stores.base import VectorStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.conftest import engine_address, unique_name

PROCESSES, THREADS, FACTS = 4, 4, 6
UPDATES = 5


@dataclass(frozen=True)
class Shared:
    """How every process reaches the one memory: picklable, built again in each process."""

    store: str
    where: str
    name: str
    folder: str = ""  #: where a history kept beside the store lives

    def parts(self) -> tuple[VectorStore, HistoryStore]:
        if self.store == "sqlite":
            from memkit.stores.sqlite import SQLiteStore

            sqlite = SQLiteStore(self.where, collection_name=self.name)
            return sqlite, sqlite.history()
        if self.store == "pgvector":
            from memkit.history.postgres import PostgresHistory
            from memkit.stores.pgvector import PgVectorStore

            return (PgVectorStore(self.where, collection_name=self.name),
                    PostgresHistory(self.where, table=f"{self.name}_h"))
        from memkit.history.sqlite import SQLiteHistory

        history = SQLiteHistory(os.path.join(self.folder, "history.db"))
        if self.store == "lancedb":
            from memkit.stores.lancedb import LanceDBStore

            return LanceDBStore(self.where, collection_name=self.name), history
        from memkit.stores.chroma import ChromaStore

        return ChromaStore(url=self.where, collection_name=self.name), history

    def memory(self) -> Memory:
        store, history = self.parts()
        return Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store,
                      history=history)


def _add_the_same_facts(start: Any, shared: Shared, threads: int, facts: int) -> list[str]:
    """In a process of its own: ``threads`` threads each add the same ``facts`` facts."""
    memory = shared.memory()
    errors: list[str] = []
    start.wait()

    def work() -> None:
        for i in range(facts):
            try:
                memory.add(f"shared fact number {i}", user_id="u", infer=False)
            except Exception as exc:  # reported to the parent, which names it
                errors.append(repr(exc))

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    memory.close()
    return errors


def _update_or_delete(start: Any, shared: Shared, memory_id: str, role: int) -> list[str]:
    """In a process of its own: role 0 deletes the memory once others have updated it;
    any other role updates it until it is gone. What each call did, or the error."""
    from memkit import NotFoundError

    memory = shared.memory()
    start.wait()
    done: list[str] = []
    try:
        if role == 0:
            while sum(h.event == "UPDATE" for h in memory.history(memory_id)) < 2:
                pass
            memory.delete(memory_id)
            done.append("deleted")
        else:
            for i in range(UPDATES):
                memory.update(memory_id, f"text {i} of process {role}")
                done.append(f"updated:text {i} of process {role}")
    except NotFoundError:
        done.append("gone")
    except Exception as exc:  # reported to the parent, which names it
        done.append(f"error:{exc!r}")
    memory.close()
    return done


def run_processes(target: Callable[..., list[str]], *args: Any,
                  processes: int = PROCESSES, numbered: bool = False) -> list[str]:
    """Run ``target(start, *args, i)`` in ``processes`` fresh processes (``i`` numbers
    them, when ``numbered``), each waiting on the barrier ``start`` for the others; what
    they return, one list."""
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Barrier(processes)
        with context.Pool(processes) as pool:
            results = [pool.apply_async(target, (start, *args, *([i] if numbered else [])))
                       for i in range(processes)]
            return [error for result in results for error in result.get()]


@pytest.fixture(params=["sqlite", "pgvector", "lancedb", "chroma-server"])
def shared(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Shared]:
    if request.param == "sqlite":
        yield Shared("sqlite", os.fspath(tmp_path / "memkit.db"), "shared")
        return
    if request.param == "lancedb":
        yield Shared("lancedb", os.fspath(tmp_path / "lance"), "shared", os.fspath(tmp_path))
        return
    if request.param == "chroma-server":
        url = engine_address("MEMKIT_TEST_CHROMA_URL")
        made = Shared("chroma", url, unique_name("processes"), os.fspath(tmp_path))
        yield made
        from memkit.stores.chroma import ChromaStore

        ChromaStore(url=url, collection_name=made.name).client.delete_collection(made.name)
        return
    dsn = engine_address("MEMKIT_TEST_PG_DSN")
    made = Shared("pgvector", dsn, unique_name("processes"))
    yield made
    drop_pg(made)


def drop_pg(shared: Shared, *tables: str) -> None:
    with psycopg.connect(shared.where, autocommit=True) as conn:
        for table in (shared.name, f"{shared.name}_h", f"{shared.name}_h_searches", *tables):
            conn.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')
        conn.execute("DELETE FROM memkit_collections WHERE name = %s", [shared.name])


@pytest.mark.timeout(180)
def test_processes_adding_the_same_facts_leave_one_memory_each(shared: Shared) -> None:
    # a Chroma server's writes are slow: fewer threads keep the test quick, the race stays
    threads = 2 if shared.store == "chroma" else THREADS
    errors = run_processes(_add_the_same_facts, shared, threads, FACTS)
    assert errors == []
    memory = shared.memory()
    items = memory.get_all(user_id="u", limit=1000).results
    assert sorted(m.memory for m in items) == sorted(f"shared fact number {i}"
                                                     for i in range(FACTS))
    for item in items:
        assert [h.event for h in memory.history(item.id)] == ["ADD"]
    memory.close()


@pytest.mark.timeout(180)
def test_processes_updating_and_deleting_one_memory_lose_no_event(shared: Shared) -> None:
    memory = shared.memory()
    added = memory.add("the first text", user_id="u", infer=False).results[0]
    done = run_processes(_update_or_delete, shared, added.id, numbered=True)
    assert [d for d in done if d.startswith("error:")] == []
    assert "deleted" in done
    events = memory.history(added.id)
    assert [e.event for e in events].count("DELETE") == 1
    assert events[-1].event == "DELETE"  # nothing changed it once it was deleted
    updates = [e.new_value for e in events if e.event == "UPDATE"]
    assert sorted(updates) == sorted(d.removeprefix("updated:") for d in done
                                     if d.startswith("updated:"))
    for before, after in itertools.pairwise(events):  # each on what the last one left
        assert after.old_value == before.new_value
    assert memory.get(added.id) is None
    memory.close()


# -- pgvector: an open never waits for writers --------------------------------------


def _in_thread(call: Callable[[], object], finished: list[str]) -> threading.Thread:
    """``call()`` in a thread of its own; ``finished`` gets "ok" or the error it raised."""
    def run() -> None:
        try:
            call()
        except Exception as exc:  # named by the assertion
            finished.append(repr(exc))
        else:
            finished.append("ok")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.timeout(120)
def test_a_pgvector_memory_opens_while_writers_hold_its_tables_and_another_the_ddl_lock(
    pg_dsn: str,
) -> None:
    """What hung 4 processes x 4 threads: an opener under memkit's DDL lock waited for a
    table that a writer held while that writer's client waited for the DDL lock. An open
    of an up-to-date schema now takes neither."""
    from memkit.graph.postgres import PostgresGraph

    shared = Shared("pgvector", pg_dsn, unique_name("open_busy"))
    graph_name = f"{shared.name}_g"
    first = shared.memory()
    first.add("a first fact", user_id="u", infer=False)
    graph = PostgresGraph(pg_dsn, graph_name=graph_name)
    graph.open()
    graph.close()
    tables = [shared.name, f"{shared.name}_h", f"{graph_name}_entities"]
    with psycopg.connect(pg_dsn) as writer, psycopg.connect(pg_dsn) as opener:
        for table in tables:  # a writer in the middle of its transaction
            writer.execute(f'LOCK TABLE "{table}" IN ROW EXCLUSIVE MODE')
        opener.execute("SELECT pg_advisory_xact_lock(%s)", [advisory_key("memkit-ddl")])
        second = shared.memory()
        second_graph = PostgresGraph(pg_dsn, graph_name=graph_name)
        finished: list[str] = []
        opened = [_in_thread(lambda: second.get_all(user_id="u"), finished),
                  _in_thread(second_graph.open, finished)]
        for thread in opened:
            thread.join(timeout=30)
        writer.rollback()
        opener.rollback()
    assert finished == ["ok", "ok"], "an open waited for a lock held by a writer or an opener"
    assert [m.memory for m in second.get_all(user_id="u").results] == ["a first fact"]
    for closing in (first, second, second_graph):
        closing.close()
    drop_pg(shared, *(f"{graph_name}_{t}" for t in ("entities", "relations",
                                                    "relation_memories", "aliases")))


@pytest.mark.timeout(120)
def test_a_pgvector_open_that_must_create_an_index_waits_for_writers_by_retrying(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A missing index needs the table, which a writer holds: the opener's wait ends at the
    lock timeout, its transaction rolls back (freeing the DDL lock) and it tries again,
    until the writer is done; then the index is there and the open succeeds."""
    import memkit._postgres

    monkeypatch.setattr(memkit._postgres, "SCHEMA_LOCK_TIMEOUT", "50ms")
    shared = Shared("pgvector", pg_dsn, unique_name("open_retry"))
    first = shared.memory()
    first.add("a first fact", user_id="u", infer=False)
    index = f"{shared.name}_memory_type"
    waiting = ("SELECT DISTINCT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
               " AND query LIKE %s")
    with psycopg.connect(pg_dsn, autocommit=True) as admin, psycopg.connect(pg_dsn) as writer:
        admin.execute(f'DROP INDEX "{index}"')
        writer.execute(f'LOCK TABLE "{shared.name}" IN ROW EXCLUSIVE MODE')
        second = shared.memory()
        finished: list[str] = []
        opener = _in_thread(lambda: second.get_all(user_id="u"), finished)
        seen: set[int] = set()
        while len(seen) < 2 and opener.is_alive():  # two attempts, each on its own connection
            seen |= {pid for pid, in admin.execute(waiting, [f"%CREATE INDEX%{index}%"])}
        writer.rollback()
        opener.join(timeout=60)
        present = admin.execute("SELECT to_regclass(%s)", [f'"{index}"']).fetchone()
    assert finished == ["ok"]
    assert len(seen) >= 2
    assert present is not None and present[0] is not None
    for closing in (first, second):
        closing.close()
    drop_pg(shared)


# -- a SQLite history opened by several processes at once ------------------------------


def test_a_history_file_opened_by_several_processes_at_once_opens_in_each(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Openers of a new file each switch it to WAL; when two switch at once SQLite answers
    one "database is locked" without waiting (waiting would deadlock): seen as the
    processes test's error. Here the first two switches meet another opener's."""
    import sqlite3

    from memkit.history.sqlite import SQLiteHistory

    busy = {"left": 2}

    class Meeting(sqlite3.Connection):
        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            if "journal_mode" in sql and busy["left"] > 0:
                busy["left"] -= 1
                raise sqlite3.OperationalError("database is locked")
            return super().execute(sql, *args)

    real = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect",
                        lambda *a, **k: real(*a, **{**k, "factory": Meeting}))
    history = SQLiteHistory(os.fspath(tmp_path / "history.db"))
    assert busy["left"] == 0
    assert history._db.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    history.close()
