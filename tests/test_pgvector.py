"""pgvector-specific behaviour, on a real PostgreSQL (the ``pg_dsn`` fixture).

The contract and filter-congruence suites (tests/stores/) cover what every
store shares; these tests cover what only PostgreSQL can get wrong: the HNSW
index under a selective filter, applies racing from several connections, and
the shared history.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg
import pytest
from psycopg import sql

from memkit._errors import ConfigError, VectorStoreError
from memkit._filters import condition, matches, parse_filter
from memkit._models import HistoryRecord
from memkit._pipeline.runtime import aapply_batch, apply_batch
from memkit._postgres import Op, Settings, Statement, drive
from memkit._time import to_iso
from memkit.history.postgres import PostgresHistory
from memkit.stores.base import Record, WriteBatch
from memkit.stores.pgvector import BULK_ROWS, PgVectorStore, build_memory_kb, translate
from tests.conftest import unique_name

pytestmark = pytest.mark.engine  # a store library beyond memory and SQLite

DIM = 16


def _vector(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _record(text: str, rng: np.random.Generator, **fields: object) -> Record:
    now = to_iso(datetime.now(UTC))
    metadata = dict(fields.pop("metadata", {}) or {})  # type: ignore[call-overload]
    return Record(
        id=str(uuid.uuid4()), memory=text, hash=str(abs(hash(text))), created_at=now,
        updated_at=now, metadata=metadata, vector=_vector(rng), **fields,  # type: ignore[arg-type]
    )


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PgVectorStore]:
    s = PgVectorStore(pg_dsn, collection_name=unique_name("pgv"))
    s.open(DIM, "test-model")
    yield s
    s.close()
    s.drop()


def test_engine_has_pgvector_with_iterative_scan(store: PgVectorStore) -> None:
    assert store._iterative_scan, "pgvector >= 0.8 expected (scripts/engines.sh builds it)"


def test_selective_filter_returns_k_rows_through_the_hnsw_index(store: PgVectorStore) -> None:
    rng = np.random.default_rng(7)
    records = [
        _record(f"memory {i}", rng, user_id="rare" if i % 100 == 0 else "common")
        for i in range(3000)
    ]
    store.insert(records)
    with store._sync_pool().connection() as conn:
        conn.execute(f'ANALYZE "{store.collection_name}"')
    query = _vector(rng)
    hits = store.search(query, limit=25, filter=condition("user_id", "eq", "rare"))
    assert len(hits) == 25 and {h.record.user_id for h in hits} == {"rare"}
    expected = sorted(
        (r for r in records if r.user_id == "rare"),
        key=lambda r: -float(r.vector @ query),  # type: ignore[operator]
    )[:25]
    assert [h.record.id for h in hits] == [r.id for r in expected]
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_write_whose_statement_failed_commits_nothing(store: PgVectorStore) -> None:
    """The store's writes in a transaction have no savepoints: when one fails and the
    caller carries on, the transaction refuses to end in a commit (PostgreSQL would roll
    it back without a word) instead of reporting a write it did not make."""
    rng = np.random.default_rng(3)
    taken = _record("taken", rng)
    store.insert([taken])
    kept = [_record("sync", rng), _record("async", rng)]
    failed = pytest.raises(VectorStoreError, match="nothing was written")
    with failed, store.transaction("k") as writer:
        writer.insert([kept[0]])
        with pytest.raises(VectorStoreError):
            writer.insert([taken])  # its id is in the table: the statement fails

    async def in_async() -> None:
        async with store.atransaction("k") as writer:
            await writer.ainsert([kept[1]])
            with pytest.raises(VectorStoreError):
                await writer.ainsert([taken])

    with pytest.raises(VectorStoreError, match="nothing was written"):
        asyncio.run(in_async())
    assert [store.get(r.id) for r in kept] == [None, None]
    assert store.count() == 1


def test_session_settings_are_sent_again_after_a_rollback(pg_dsn: str) -> None:
    """A connection keeps the settings a read sent; one sent in a transaction that rolled
    back is sent again by the next read that needs it."""
    def show(value: str) -> Op[str]:
        yield Settings((("hnsw.ef_search", value),))
        rows = yield Statement(sql.SQL("SHOW hnsw.ef_search"))
        return str(rows[0][0])

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("LOAD 'vector'")
        assert drive(conn, show("77"), atomic=False) == "77"
        with pytest.raises(psycopg.errors.DivisionByZero), conn.transaction():
            assert drive(conn, show("88"), atomic=False) == "88"
            conn.execute("SELECT 1/0")
        assert drive(conn, show("88"), atomic=False) == "88"
        assert drive(conn, show("77"), atomic=False) == "77"


def _hnsw_present(store: PgVectorStore) -> bool:
    with psycopg.connect(store.dsn) as conn:
        row = conn.execute("SELECT to_regclass(%s)", (f'"{store.collection_name}_hnsw"',)).fetchone()
    return row is not None and row[0] is not None


def test_a_bulk_insert_rebuilds_the_index_unless_the_table_is_in_use(store: PgVectorStore) -> None:
    rng = np.random.default_rng(3)
    records = [_record(f"bulk {i}", rng) for i in range(BULK_ROWS)]
    store.insert(records)  # the index is built after the rows are in
    assert _hnsw_present(store) and store.count() == BULK_ROWS
    target = records[123]
    assert target.vector is not None
    assert store.search(target.vector, limit=1)[0].record.id == target.id
    more = [_record(f"more {i}", rng) for i in range(BULK_ROWS)]
    with psycopg.connect(store.dsn) as reader, reader.transaction():
        reader.execute(f'SELECT count(*) FROM "{store.collection_name}"')  # holds a lock
        store.insert(more)  # cannot lock the table: grows the index instead, without waiting
    assert _hnsw_present(store) and store.count() == 2 * BULK_ROWS
    assert store.search(more[7].vector, limit=1)[0].record.id == more[7].id  # type: ignore[arg-type]


def test_a_rebuild_asks_for_the_memory_its_graph_needs_within_the_cap() -> None:
    million = build_memory_kb(1_000_000, 384, 65536, 4096)
    assert 2_400_000 < million < 4096 * 1024  # about 2.3 kB a row is what pgvector holds
    assert build_memory_kb(1_000_000, 384, 65536, 1024) == 1024 * 1024  # the cap
    assert build_memory_kb(1_000, 384, 8 * 1024 * 1024, 4096) == 8 * 1024 * 1024  # the server's


@pytest.mark.parametrize("ef_search", [0, 1001])
def test_ef_search_out_of_range_is_a_config_error(pg_dsn: str, ef_search: int) -> None:
    with pytest.raises(ConfigError, match="ef_search"):
        PgVectorStore(pg_dsn, collection_name=unique_name("pgv"), ef_search=ef_search)


def test_concurrent_applies_from_several_connections_do_not_duplicate(pg_dsn: str) -> None:
    name = unique_name("pgv_race")
    stores = [PgVectorStore(pg_dsn, collection_name=name) for _ in range(4)]
    history = PostgresHistory(pg_dsn, table=unique_name("hist_race"))
    try:
        for s in stores:
            s.open(DIM, "test-model")
        scope = parse_filter({"user_id": "alice"})

        def add(i: int) -> set[str]:
            rng = np.random.default_rng(i)
            record = _record("likes tea", rng, user_id="alice")
            row = HistoryRecord(id=str(uuid.uuid4()), memory_id=record.id, event="ADD",
                                new_value=record.memory, timestamp=datetime.now(UTC))
            batch = WriteBatch(adds=[record], history=[row], dedup_scope=scope)
            return set(apply_batch(stores[i % len(stores)], history, batch).winners)

        with ThreadPoolExecutor(8) as pool:
            skipped = list(pool.map(add, range(16)))
        assert stores[0].count(scope) == 1
        assert sum(len(s) for s in skipped) == 15
        (kept,), _ = stores[0].list(scope)
        assert [h.event for h in history.get(kept.id)] == ["ADD"]
    finally:
        for s in stores:
            s.close()
        stores[0].drop()
        history.drop()
        history.close()


async def test_async_apply_and_history_share_one_transaction(pg_dsn: str) -> None:
    store = PgVectorStore(pg_dsn, collection_name=unique_name("pgv_async"))
    history = PostgresHistory(pg_dsn, table=unique_name("hist_async"))
    try:
        await store.aopen(DIM, "test-model")
        rng = np.random.default_rng(1)
        record = _record("speaks Portuguese", rng, run_id="r1")
        row = HistoryRecord(id="h1", memory_id=record.id, event="ADD", new_value=record.memory,
                            timestamp=datetime.now(UTC), run_id="r1")
        scope = parse_filter({"run_id": "r1"})
        applied = await aapply_batch(store, history,
                                     WriteBatch([record], history=[row], dedup_scope=scope))
        assert applied.winners == {}
        again = _record("speaks Portuguese", rng, run_id="r1")
        applied = await aapply_batch(store, history, WriteBatch([again], dedup_scope=scope))
        assert set(applied.winners) == {again.id} and applied.winners[again.id].id == record.id
        assert await store.acount() == 1
        assert [h.id for h in await history.aget(record.id)] == ["h1"]
        hits = await store.akeyword_search("portuguese", limit=5)
        assert [h.record.id for h in hits] == [record.id] and 0 < hits[0].score <= 1
    finally:
        await store.aclose()
        store.drop()
        await history.aclose()
        history.drop()


def test_history_is_oldest_first_with_insertion_order_breaking_ties(pg_dsn: str) -> None:
    history = PostgresHistory(pg_dsn, table=unique_name("hist"))
    try:
        t0 = datetime(2024, 5, 1, tzinfo=UTC)
        same = [HistoryRecord(id=f"tie{i}", memory_id="m", event="UPDATE", timestamp=t0)
                for i in range(5)]
        history.add([HistoryRecord(id="late", memory_id="m", event="DELETE", is_deleted=True,
                                   timestamp=t0 + timedelta(days=1))])
        history.add(same)
        history.add([HistoryRecord(id="first", memory_id="m", event="ADD",
                                   timestamp=t0 - timedelta(days=1), user_id="u")])
        got = history.get("m")
        assert [h.id for h in got] == ["first", *(h.id for h in same), "late"]
        assert got[0].user_id == "u" and got[-1].is_deleted and got[0].timestamp.tzinfo
        assert history.get("other") == []
    finally:
        history.drop()
        history.close()


_VALUES: list[object] = [0, 1, 2.5, -3, True, False, "", "a", "B", "ä", "Straße", "İx", "tea",
                         ["a", "tea"], [1, 2], ["ÄB"], None]


def test_translation_matches_the_reference_evaluator(store: PgVectorStore) -> None:
    """A quick seeded sample; tests/stores/ runs the full congruence suite."""
    rng = random.Random(3)
    vrng = np.random.default_rng(3)
    records = []
    for i in range(40):
        metadata = {k: rng.choice(_VALUES) for k in ("n", "s", "x") if rng.random() < 0.8}
        records.append(_record(rng.choice(["Tea time", "ÄBC tea", "coffee"]) + str(i), vrng,
                               user_id=rng.choice(["u1", "u2", None]), metadata=metadata))
    store.insert(records)
    ops = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains"]
    for _ in range(150):
        field = rng.choice(["n", "s", "x", "user_id", "memory", "missing"])
        op = rng.choice(ops)
        if op in ("in", "nin"):
            value: object = rng.sample([v for v in _VALUES if isinstance(v, str | int)], 3)
        else:
            value = rng.choice([v for v in _VALUES if v is not None and not isinstance(v, list)])
        if op in ("gt", "gte", "lt", "lte") and isinstance(value, bool):
            continue
        if op == "icontains" and not isinstance(value, str):
            continue
        expr = condition(field, op, value)
        expected = {r.id for r in records if matches(expr, r.lookup)}
        got = {r.id for r in store.list(expr, limit=1000)[0]}
        assert got == expected, (expr, translate(expr))


def test_hostile_names_and_values_are_data(store: PgVectorStore) -> None:
    rng = np.random.default_rng(5)
    nasty = "x'); DROP TABLE memkit_collections; --"
    record = _record("a & b | !c <-> d:*", rng, metadata={nasty: nasty})
    store.insert([record])
    assert store.count(condition(nasty, "eq", nasty)) == 1
    assert [h.record.id for h in store.keyword_search("a & b | !c", limit=3)] == [record.id]
    assert store.keyword_search("'); --", limit=3) == []


def test_a_table_in_the_previous_release_layout_migrates(pg_dsn: str) -> None:
    """A collection and history written before memkit kept versions (their columns
    dropped here: exactly the previous release's layout) open, gain the columns, and
    keep their rows."""
    import psycopg

    from memkit import Memory
    from memkit.testing import HashEmbedder, ScriptedLLM

    name, history_table = unique_name("pgold"), unique_name("pgoldh")
    store = PgVectorStore(pg_dsn, collection_name=name)
    history = PostgresHistory(pg_dsn, table=history_table)
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store,
                history=history) as m:
        kept = m.add("Lives in Lisbon", user_id="u", infer=False).results[0].id
    with psycopg.connect(pg_dsn) as conn:
        conn.execute(f'ALTER TABLE "{name}" DROP COLUMN valid_from, DROP COLUMN valid_to,'
                     " DROP COLUMN expires_at, DROP COLUMN supersedes, DROP COLUMN memory_type,"
                     " DROP COLUMN importance, DROP COLUMN confidence, DROP COLUMN access_count,"
                     " DROP COLUMN last_accessed_at")
        conn.execute(f'ALTER TABLE "{history_table}" DROP COLUMN reverts')
    store = PgVectorStore(pg_dsn, collection_name=name)
    history = PostgresHistory(pg_dsn, table=history_table)
    try:
        with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store,
                    history=history) as m:
            assert [i.id for i in m.get_all(user_id="u").results] == [kept]
            before = m.get(kept)
            assert before is not None and before.memory_type is None
            assert before.confidence == 1.0 and before.access_count == 0
            m.update(kept, importance=0.5, memory_type="fact")
            assert m.get_all(user_id="u", filters={"importance": 0.5}).results[0].id == kept
            m.update(kept, "Lives in Berlin")
            assert [v.memory for v in m.versions(kept)] == ["Lives in Lisbon", "Lives in Berlin"]
            undo = m.revert(m.history(kept)[-1].id)
            assert undo.reverts is not None and m.history(kept)[-1].reverts == undo.reverts
    finally:
        store.drop()
        history.drop()


_LEFT_OPEN = """
import asyncio, sys, tempfile, threading, uuid
from memkit import AsyncMemory, Memory
from memkit.history.sqlite import SQLiteHistory
from memkit.stores.pgvector import PgVectorStore
from memkit.testing import HashEmbedder, ScriptedLLM

for _ in range(10):
    store = PgVectorStore(sys.argv[1], collection_name="left_open_" + uuid.uuid4().hex[:8])
    history = SQLiteHistory(tempfile.mkdtemp() + "/history.db")
    sync = Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store, history=history)
    start = threading.Barrier(5)

    def worker():
        start.wait()
        sync.add("I like tea", user_id="u", infer=False)

    async def main():  # its AsyncMemory is never closed: the loop must still finish
        m = AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store,
                        history=history)
        await asyncio.to_thread(start.wait)
        await asyncio.gather(*(m.add("I like tea", user_id="u", infer=False) for _ in range(4)))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    asyncio.run(main())
    for t in threads:
        t.join()
    sync.close()
print("done")
"""


def test_asyncio_run_ends_with_an_async_memory_left_open(pg_dsn: str) -> None:
    """Concurrent async calls on a fresh pool, then the loop ends without ``aclose()``: the
    pools' connections were all made at open, so no connect is cancelled in flight (which
    psycopg's pool would swallow, hanging ``asyncio.run`` at exit)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _LEFT_OPEN, pg_dsn], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr[-2000:]
