"""The search log and explicit feedback through Memory and AsyncMemory: the log lives in
the history store (SQLite, PostgreSQL), is off by default and keeps no query text unless
asked; feedback moves confidence through the buffered reinforcement path."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from memkit import AsyncMemory, MemkitError, Memory, NotFoundError
from memkit.history.base import HistoryStore
from memkit.history.postgres import PostgresHistory
from memkit.history.sqlite import SQLiteHistory
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.conftest import engine_address, unique_name
from tests.pipeline.conftest import MakeMemory, Shell
from tests.pipeline.test_lifecycle import START, Clock, decaying


class Logged:
    """A memory over a history store whose search table the test reads raw."""

    def __init__(self, kind: str, tmp_path: Any) -> None:
        self.kind = kind
        if kind == "sqlite":
            self.path = str(tmp_path / "history.db")
            self.history: HistoryStore = SQLiteHistory(self.path)
        else:
            self.dsn = engine_address("MEMKIT_TEST_PG_DSN")
            self.table = unique_name("h")
            self.history = PostgresHistory(self.dsn, table=self.table)

    def raw_rows(self) -> list[tuple[Any, ...]]:
        if self.kind == "sqlite":
            with sqlite3.connect(self.path) as conn:
                return conn.execute('SELECT * FROM "history_searches"').fetchall()
        import psycopg

        with psycopg.connect(self.dsn) as conn:
            return conn.execute(f'SELECT * FROM "{self.table}_searches"').fetchall()

    def drop(self) -> None:
        if isinstance(self.history, PostgresHistory):
            self.history.drop()


@pytest.fixture(params=["sqlite", "postgres"])
def logged(request: pytest.FixtureRequest, shell: str, tmp_path: Any) -> Iterator[Any]:
    made: list[tuple[Shell, Logged]] = []
    loop = asyncio.new_event_loop()

    def make(**lifecycle: Any) -> tuple[Shell, Logged]:
        where = Logged(str(request.param), tmp_path / str(len(made)))
        cls = Memory if shell == "sync" else AsyncMemory
        memory = cls({"vector_store": {"provider": "memory"}, "lifecycle": lifecycle},
                     llm=ScriptedLLM(), embedder=HashEmbedder(), history=where.history,
                     clock=Clock())
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
