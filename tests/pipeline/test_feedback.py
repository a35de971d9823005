"""The search log and explicit feedback through Memory and AsyncMemory: the log lives in
the history store (SQLite, PostgreSQL), is off by default and keeps no query text unless
asked; feedback moves confidence through the buffered reinforcement path."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memkit import AsyncMemory, HistoryRecord, MemkitError, Memory, NotFoundError, SearchLogEntry
from memkit._postgres import advisory_key, drive
from memkit.history.base import HistoryStore
from memkit.history.postgres import PostgresHistory
from memkit.history.sqlite import SQLiteHistory
from memkit.stores.base import VectorStore
from memkit.stores.memory import InMemoryStore
from memkit.stores.pgvector import PgVectorStore
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.conftest import engine_address, unique_name
from tests.pipeline.conftest import MakeMemory, Shell
from tests.pipeline.test_lifecycle import START, Clock, decaying


class Logged:
    """A memory's store and history, whose search table the test reads raw. ``kind``: the
    history's engine, beside an in-memory store; ``sqlite-store`` and ``pgvector``: the
    history in the vector store's own file or database, written in its transactions."""

    def __init__(self, kind: str, tmp_path: Any) -> None:
        self.kind = kind
        self.clock = Clock()
        self.store: VectorStore = InMemoryStore()
        if kind.startswith("sqlite"):
            self.path = str(tmp_path / "history.db")
            self.table = "history"
            self.history: HistoryStore = SQLiteHistory(self.path)
            if kind == "sqlite-store":
                store = SQLiteStore(self.path, collection_name="c")
                self.store, self.table, self.history = store, "c_history", store.history()
        else:
            self.dsn = engine_address("MEMKIT_TEST_PG_DSN")
            self.table = unique_name("h")
            self.history = PostgresHistory(self.dsn, table=self.table)
            if kind == "pgvector":
                self.store = PgVectorStore(self.dsn, collection_name=unique_name("c"))

    def raw_rows(self) -> list[tuple[Any, ...]]:
        if self.kind.startswith("sqlite"):
            with sqlite3.connect(self.path) as conn:
                return conn.execute(f'SELECT * FROM "{self.table}_searches"').fetchall()
        import psycopg

        with psycopg.connect(self.dsn) as conn:
            return conn.execute(f'SELECT * FROM "{self.table}_searches"').fetchall()

    def drop(self) -> None:
        if isinstance(self.history, PostgresHistory):
            self.history.drop()


@pytest.fixture(params=["sqlite", "postgres", "sqlite-store", "pgvector"])
def logged(request: pytest.FixtureRequest, shell: str, tmp_path: Any) -> Iterator[Any]:
    made: list[tuple[Shell, Logged]] = []
    loop = asyncio.new_event_loop()

    def make(**lifecycle: Any) -> tuple[Shell, Logged]:
        where = Logged(str(request.param), tmp_path / str(len(made)))
        cls = Memory if shell == "sync" else AsyncMemory
        memory = cls({"lifecycle": lifecycle}, llm=ScriptedLLM(), embedder=HashEmbedder(),
                     vector_store=where.store, history=where.history, clock=where.clock)
        made.append((Shell(memory, loop), where))
        return made[-1]

    yield make
    for wrapped, where in made:
        if wrapped.is_async:
            loop.run_until_complete(wrapped.memory.aclose())  # type: ignore[union-attr]
        else:
            wrapped.memory.close()  # type: ignore[union-attr]
        where.drop()
    loop.close()


def test_search_log_is_off_by_default(logged: Any) -> None:
    m, where = logged()
    m.add("User likes green tea", user_id="u", infer=False)
    m.search("green tea", user_id="u")
    assert m.search_log() == [] and where.raw_rows() == []


def test_search_log_keeps_hash_k_ids_latency_and_scope_not_the_query(logged: Any) -> None:
    m, where = logged(search_log=True)
    tea = m.add("User likes green tea", user_id="u", infer=False).results[0]
    m.add("User plays chess", user_id="u", infer=False)
    found = m.search("green tea secret", user_id="u", limit=5)
    m.search("chess", user_id="other")
    [entry] = m.search_log(user_id="u")
    assert entry.query is None
    assert entry.query_hash == hashlib.sha256(b"green tea secret").hexdigest()
    assert entry.k == 5 and entry.result_ids == [r.id for r in found.results]
    assert entry.result_ids[0] == tea.id
    assert entry.latency_ms >= 0 and entry.timestamp == START and entry.user_id == "u"
    assert sorted(e.user_id or "" for e in m.search_log()) == ["other", "u"]
    assert len(m.search_log(limit=1)) == 1
    rows = where.raw_rows()
    assert len(rows) == 2 and not any("secret" in str(value) for row in rows for value in row)


def test_search_log_keeps_the_query_text_when_enabled(logged: Any) -> None:
    m, where = logged(search_log=True, search_log_text=True)
    m.search("green tea secret", user_id="u")
    assert m.search_log(user_id="u")[0].query == "green tea secret"
    assert any("green tea secret" in str(value) for value in where.raw_rows()[0])


def interleave(m: Shell, history: HistoryStore, name: str, act: Callable[[], Any], *,
               first: bool = True) -> None:
    """Run ``act`` (a purge, a search) just before (``first``) or just after the history's
    ``name`` (or its async twin) writes: as another process or thread would."""
    if m.is_async:
        real_async = getattr(history, f"a{name}")

        async def acted(*args: Any) -> None:
            if not first:
                await real_async(*args)
            done = act()
            if inspect.isawaitable(done):
                await done
            if first:
                await real_async(*args)

        setattr(history, f"a{name}", acted)
        return
    real = getattr(history, name)

    def synced(*args: Any) -> None:
        if not first:
            real(*args)
        act()
        if first:
            real(*args)

    setattr(history, name, synced)


def restore(history: HistoryStore, name: str) -> None:
    vars(history).pop(name, None)
    vars(history).pop(f"a{name}", None)


def test_a_search_read_before_a_purge_is_not_logged_after_it(logged: Any) -> None:
    """The purge lands between the search's read and its log: the late entry would keep
    the purged id and the purged user's query; a search of another user stays logged."""
    m, where = logged(search_log=True, search_log_text=True)
    secret = m.add("User's code is zanzibar", user_id="u", infer=False).results[0]
    m.search("code zanzibar", user_id="other")
    interleave(m, where.history, "log_searches", lambda: m.memory.purge(user_id="u"))
    assert [r.id for r in m.search("code zanzibar", user_id="u").results] == [secret.id]
    restore(where.history, "log_searches")
    assert m.search_log(user_id="u") == [] and len(m.search_log()) == 1
    [row] = where.raw_rows()
    assert secret.id not in str(row) and "other" in row
    where.clock.advance(1)  # a search made after the purge is logged again
    m.add("User's code is new", user_id="u", infer=False)
    m.search("code new", user_id="u")
    assert [e.query for e in m.search_log(user_id="u")] == ["code new"]


def test_a_search_that_found_nothing_is_not_logged_after_its_scopes_purge(logged: Any) -> None:
    m, where = logged(search_log=True, search_log_text=True)
    interleave(m, where.history, "log_searches", lambda: m.memory.purge(user_id="u"))
    assert m.search("my secret question", user_id="u").results == []
    assert m.search_log() == [] and where.raw_rows() == []


def test_a_search_read_before_a_reset_is_not_logged_after_it(logged: Any) -> None:
    m, where = logged(search_log=True, search_log_text=True)
    m.add("User's code is zanzibar", user_id="u", infer=False)
    interleave(m, where.history, "log_searches", lambda: m.memory.reset())
    assert len(m.search("code zanzibar", user_id="u").results) == 1
    restore(where.history, "log_searches")
    assert m.search_log() == [] and where.raw_rows() == []
    where.clock.advance(1)
    m.search("code zanzibar", user_id="u")
    assert [e.query for e in m.search_log()] == ["code zanzibar"]


def test_a_search_logged_while_a_purge_runs_is_deleted_with_the_purged_memory(
        logged: Any) -> None:
    """The search reads the memory and logs it after the purge deleted the memory's logged
    searches but before the memory itself goes: writing its PURGE row deletes the entry."""
    m, where = logged(search_log=True)
    gone = m.add("User's code is zanzibar", user_id="u", infer=False).results[0]
    kept = m.add("User plays chess", user_id="u", infer=False).results[0]
    interleave(m, where.history, "forget", lambda: m.memory.search("code zanzibar", user_id="u"),
               first=False)
    m.delete(gone.id, hard=True)
    restore(where.history, "forget")
    assert m.get(gone.id) is None and m.search_log() == []
    m.search("chess", user_id="u")
    assert [e.result_ids[0] for e in m.search_log(user_id="u")] == [kept.id]


def test_postgres_logs_a_search_only_after_a_purge_being_written_commits(pg_dsn: str) -> None:
    """The log's check and a purge's PURGE rows in two open transactions at once: without
    the search log's lock neither would see the other (each statement reads what committed
    before it began), and the entry would outlive the purge."""
    import psycopg

    history = PostgresHistory(pg_dsn, table=unique_name("h"))
    history.open()
    purge = HistoryRecord(id=str(uuid.uuid4()), memory_id="m1", event="PURGE", timestamp=START,
                          is_deleted=True, user_id="u")
    entry = SearchLogEntry(id=str(uuid.uuid4()), timestamp=START, query_hash="0" * 64,
                           query="code zanzibar", k=1, result_ids=["m1"], latency_ms=1.0,
                           user_id="u")
    key = advisory_key("memkit-search-log", history.table)
    logging = threading.Thread(target=history.log_searches, args=([entry],))
    try:
        with psycopg.connect(pg_dsn) as conn, conn.transaction():
            drive(conn, history.insert_op([purge]))  # the purge's lock, held until it commits
            logging.start()
            deadline = time.monotonic() + 60
            while not conn.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                    " AND classid::bigint = %s AND objid::bigint = %s",
                    ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF)).fetchone()[0]:  # type: ignore[index]
                assert logging.is_alive() and time.monotonic() < deadline, "the log did not wait"
        logging.join()
        assert history.searches({}, 10) == [] and history.get("m1") == [purge]
    finally:
        if logging.ident is not None:
            logging.join()
        history.drop()


@pytest.mark.parametrize("store_name", ["memory", "sqlite", "pgvector"])
def test_feedback_raises_or_lowers_confidence_through_the_buffer(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = decaying(make_memory, clock, feedback_penalty=0.2)
    good = m.add("User likes green tea", user_id="u", infer=False).results[0]
    bad = m.add("User likes black tea", user_id="u", infer=False).results[0]
    clock.advance(30)  # both at about 0.5
    m.feedback(good.id, useful=True)
    m.feedback(bad.id, useful=False)
    assert m.get(good.id, reinforce=False).access_count == 0  # type: ignore[union-attr]  # still buffered
    m.stats(user_id="u")  # writes the buffer
    liked, disliked = m.get(good.id, reinforce=False), m.get(bad.id, reinforce=False)
    assert liked is not None and disliked is not None
    assert liked.confidence == pytest.approx(0.6, abs=0.01) and liked.access_count == 1
    assert disliked.confidence == pytest.approx(0.3, abs=0.01) and disliked.access_count == 0
    ranked = [r.id for r in m.search("User likes tea", user_id="u", mode="vector").results]
    assert ranked.index(good.id) < ranked.index(bad.id)
    with pytest.raises(NotFoundError):
        m.feedback("00000000-0000-0000-0000-000000000000", useful=True)
    with pytest.raises(MemkitError):
        m.feedback(good.id, useful="yes")
