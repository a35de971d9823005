"""The change feed of the Python API: ``changes`` reads memories' changes in commit order
from a position; ``AsyncMemory.watch`` follows them as they commit, from this memory
object or any other one sharing the history (another process's is tested through the
server, tests/server/test_feed_workers.py)."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memkit import AsyncMemory, Change, InvalidArgument, Memory
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.conftest import unique_name
from tests.pipeline.conftest import MakeMemory

#: generous: a wait for an event that never comes fails the test, it never times it
PATIENCE = 60.0


def test_changes_in_commit_order_from_any_position(make_memory: MakeMemory) -> None:
    m = make_memory()
    kept = m.add("Alice likes tea", user_id="alice", infer=False).results[0].id
    gone = m.add("Bob likes chess", user_id="bob", infer=False).results[0].id
    m.update(kept, "Alice likes green tea")
    m.delete(kept)
    m.purge(user_id="bob")

    changes = m.changes()
    assert all(isinstance(c, Change) for c in changes)
    assert [(c.event, c.memory_id, c.new_value) for c in changes] == [
        ("ADD", kept, "Alice likes tea"), ("UPDATE", kept, "Alice likes green tea"),
        ("DELETE", kept, None), ("PURGE", gone, None)]  # a purge leaves no text behind
    assert len({c.position for c in changes}) == 4
    for i, change in enumerate(changes):
        assert m.changes(change.position) == changes[i + 1:]
    assert m.changes(changes[0].position, limit=1) == changes[1:2]
    assert [c.event for c in m.changes(user_id="bob")] == ["PURGE"]
    assert m.changes(user_id="carol") == []
    with pytest.raises(InvalidArgument, match="position"):
        m.changes("not a position")


def test_changes_carry_the_entities_created_and_the_consolidations(tmp_path: Path) -> None:
    from memkit.stores.sqlite import SQLiteStore

    store = SQLiteStore(str(tmp_path / "m.db"))
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store,
                graph_store=store.graph()) as m:
        lunch = m.add("Lunch at Acme", user_id="alice", infer=False, entities=["Acme"])
        m.add_entity("acme", type="organization", user_id="alice")  # known: not created
        m.add_relation("Alice", "works at", "Acme", user_id="alice")  # Alice is new
        m.add_entity("Berlin", type="city", user_id="bob")
        kept, merged = (m.add(text, user_id="alice", infer=False).results[0].id
                        for text in ("User plays chess", "user plays chess!"))
        report = m.consolidate(user_id="alice", dry_run=False)
        assert m.consolidate(user_id="alice", dry_run=False).clusters == []  # no row

        changes = m.changes(user_id="alice")
        assert [c.event for c in changes] == [
            "ADD", "ENTITY_ADD", "ENTITY_ADD", "ADD", "ADD", "DELETE", "CONSOLIDATE"]
        acme, alice = (m.get_entity(name, user_id="alice") for name in ("Acme", "Alice"))
        assert [(c.memory_id, json.loads(c.new_value or "")) for c in changes[1:3]] == [
            (acme.id, {"name": "Acme", "type": "unknown"}),
            (alice.id, {"name": "Alice", "type": "unknown"})]
        done = changes[-1]
        assert (done.user_id, json.loads(done.new_value or "")) == ("alice", {
            "examined": report.examined, "clusters": 1, "merged": {kept: [merged]}})
        assert changes[-2].memory_id == merged
        assert [(c.event, c.memory_id) for c in m.changes(changes[2].position, user_id="alice")
                ] == [(c.event, c.memory_id) for c in changes[3:]]
        berlin = m.changes(user_id="bob")
        assert [(c.event, c.user_id) for c in berlin] == [("ENTITY_ADD", "bob")]

        # a memory's history stays the memory's; an entity's and a run's are their own
        assert [h.event for h in m.history(lunch.results[0].id)] == ["ADD"]
        assert [h.event for h in m.history(kept)] == ["ADD"]
        assert [h.event for h in m.history(acme.id)] == ["ENTITY_ADD"]
        assert [h.id for h in m.history(done.memory_id)] == [done.id]
        for event in (changes[1], done):
            with pytest.raises(InvalidArgument, match="cannot be reverted"):
                m.revert(event.id)


async def _follow(memory: AsyncMemory, writes: Callable[[], Any], want: int,
                  **scope: Any) -> list[Change]:
    """What ``watch`` delivers, entered before ``writes()`` runs in a thread."""
    got: list[Change] = []
    async with memory.watch(**scope) as changes:
        async def read() -> None:
            async for change in changes:
                got.append(change)
                if len(got) == want:
                    return

        reader = asyncio.ensure_future(read())
        await asyncio.to_thread(writes)
        await asyncio.wait_for(reader, PATIENCE)
    return got


def _watch_sees_another_writer(async_memory: AsyncMemory, other: Memory, *,
                               write_before: bool = True) -> None:
    """Run in one event loop, which also closes ``async_memory``."""
    async def scenario() -> None:
        if write_before:
            await async_memory.add("before the watch", user_id="alice", infer=False)
        texts = [f"alice {i} {uuid.uuid4()}" for i in range(3)]

        def writes() -> None:
            for text in texts:
                other.add(text, user_id="alice", infer=False)
                other.add(f"bob {text}", user_id="bob", infer=False)

        got = await _follow(async_memory, writes, 3, user_id="alice")
        assert [c.new_value for c in got] == texts  # not what was there before, nor bob's
        resumed = await async_memory.changes(got[0].position, user_id="alice")
        assert [c.new_value for c in resumed] == texts[1:]
        async with async_memory.watch(got[1].position, user_id="alice") as changes:
            assert (await asyncio.wait_for(changes.__anext__(), PATIENCE)).new_value == texts[2]

    async def closing() -> None:
        try:
            await scenario()
        finally:
            await async_memory.aclose()

    asyncio.run(closing())


@pytest.fixture
def two_on_one_file(tmp_path: Path) -> Iterator[tuple[AsyncMemory, Memory]]:
    from memkit.stores.sqlite import SQLiteStore

    def store() -> SQLiteStore:
        return SQLiteStore(str(tmp_path / "m.db"), collection_name="c")

    first, second = store(), store()
    async_memory = AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=first,
                               history=first.history())
    other = Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=second,
                   history=second.history())
    yield async_memory, other
    other.close()


def test_watch_follows_another_writer_on_sqlite(two_on_one_file: tuple[AsyncMemory, Memory]
                                                ) -> None:
    _watch_sees_another_writer(*two_on_one_file)


def test_watch_follows_its_own_writes_in_memory() -> None:
    from memkit.stores.memory import InMemoryStore

    memory = AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=InMemoryStore())

    async def scenario() -> None:
        async with memory.watch(user_id="u") as changes:
            added = await memory.add("a fact", user_id="u", infer=False)
            change = await asyncio.wait_for(changes.__anext__(), PATIENCE)
        assert (change.event, change.memory_id) == ("ADD", added.results[0].id)
        await memory.aclose()

    asyncio.run(scenario())


def test_watch_follows_another_writer_on_postgres(pg_dsn: str) -> None:
    from memkit.history.postgres import PostgresHistory
    from memkit.stores.pgvector import PgVectorStore

    name = unique_name("changes")

    def parts() -> dict[str, Any]:
        return {"vector_store": PgVectorStore(pg_dsn, collection_name=name),
                "history": PostgresHistory(pg_dsn, table=f"{name}_h")}

    async_memory = AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), **parts())
    other = Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), **parts())
    try:  # a watch may start before a change that committed while an older one ran
        _watch_sees_another_writer(async_memory, other, write_before=False)
        with pytest.raises(InvalidArgument, match="position"):
            other.changes("12")
    finally:
        other.close()


def test_a_watch_cancelled_on_its_way_in_leaves_no_task_behind(tmp_path: Path) -> None:
    from memkit.stores.sqlite import SQLiteStore

    async def main() -> None:
        store = SQLiteStore(str(tmp_path / "m.db"))
        async with AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store) as m:
            async def follow() -> None:
                async with m.watch(user_id="alice") as changes:
                    async for _ in changes:
                        pass

            follower = asyncio.create_task(follow())
            await asyncio.sleep(0)  # inside watch(): waiting for the history to listen
            follower.cancel()
            await asyncio.wait([follower])
            assert follower.cancelled()
            assert asyncio.all_tasks() == {asyncio.current_task()}

    asyncio.run(main())


def test_the_sync_watch_follows_another_writer(tmp_path: Path) -> None:
    from memkit.stores.sqlite import SQLiteStore

    def memory() -> Memory:
        store = SQLiteStore(str(tmp_path / "m.db"), collection_name="c")
        return Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store,
                      history=store.history())

    watching, writing = memory(), memory()
    try:
        writing.add("before the watch", user_id="u", infer=False)
        with watching.watch(user_id="u") as changes:
            writer = threading.Thread(target=lambda: [
                writing.add(text, user_id=user, infer=False)
                for user, text in (("v", "another scope"), ("u", "first"), ("u", "second"))])
            writer.start()
            got = [next(changes).new_value, next(changes).new_value]
            writer.join(PATIENCE)
        assert got == ["first", "second"]
        with pytest.raises(RuntimeError, match="as changes"):
            next(changes)
    finally:
        watching.close()
        writing.close()


def _forgets_what_named_a_forgotten_memory(m: Memory) -> None:
    """A hard delete takes out the history rows that tell of the memory: its own, the
    consolidation that merged it (which memory merged into which tells what it said) and
    the entity it alone named; another scope's consolidation stays."""
    lunch = m.add("Lunch at Acme", user_id="alice", infer=False, entities=["Acme"]).results[0]
    for user in ("alice", "bob"):
        for text in ("User plays chess", "user plays chess!"):
            m.add(text, user_id=user, infer=False)
        m.consolidate(user_id=user, dry_run=False)
    assert [c.event for c in m.changes(user_id="alice")].count("CONSOLIDATE") == 1
    kept = next(c.memory_id for c in m.changes(user_id="alice") if c.event == "ADD"
                and c.new_value == "User plays chess")
    m.delete(kept, hard=True)
    m.delete(lunch.id, hard=True)
    assert [c.event for c in m.changes(user_id="alice")] == ["PURGE", "PURGE", "PURGE"]
    assert [c.event for c in m.changes(user_id="bob")] == ["ADD", "ADD", "DELETE", "CONSOLIDATE"]


def test_a_hard_delete_forgets_the_consolidations_and_entities_that_named_it_on_sqlite(
    tmp_path: Path,
) -> None:
    from memkit.stores.sqlite import SQLiteStore

    store = SQLiteStore(str(tmp_path / "m.db"))
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store,
                graph_store=store.graph()) as m:
        _forgets_what_named_a_forgotten_memory(m)


def test_a_hard_delete_forgets_the_consolidations_and_entities_that_named_it_on_postgres(
    pg_dsn: str,
) -> None:
    from memkit.graph.postgres import PostgresGraph
    from memkit.history.postgres import PostgresHistory
    from memkit.stores.pgvector import PgVectorStore

    name = unique_name("forget")
    store = PgVectorStore(pg_dsn, collection_name=name)
    history = PostgresHistory(pg_dsn, table=f"{name}_h")
    graph = PostgresGraph(pg_dsn, graph_name=f"{name}_g")
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store,
                history=history, graph_store=graph) as m:
        _forgets_what_named_a_forgotten_memory(m)
        m.reset()
