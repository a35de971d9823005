"""Re-embedding a SQLite file: a file of the previous release, a migration killed
before its switch, and ones cancelled before and during their switch (the contract on every
store is in tests/pipeline/test_reembed.py)."""

from __future__ import annotations

import asyncio
import gc
import shutil
import sqlite3
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from memkit import AsyncMemory, ConfigError, Memory
from memkit.embeddings.base import Matrix
from memkit.stores.base import VectorStore
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.test_migration import OLD_DB

NEW = HashEmbedder(256, model_name="hash-bow-v2")  # the same size, another model


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_a_file_of_the_previous_release_reembeds_without_loss(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(OLD_DB, path)
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=SQLiteStore(str(path))) as m:
        before = m.export()
        result = m.reembed(NEW)
        assert result.memories == len(before) and result.new_model == "hash-bow-v2"
        assert m.export() == before  # texts, fields and history as they were
        assert m.search("tea", user_id="alice", limit=1).results[0].memory == "Likes tea"
    with pytest.raises(ConfigError, match="hash-bow-v2"):
        Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=SQLiteStore(str(path))
               ).get_all(user_id="alice")
    assert "memkit_records" not in _tables(path)  # the old vectors are gone with their tables


def test_a_migration_killed_before_its_switch_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "memkit.db"
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                vector_store=SQLiteStore(str(path))) as m:
        m.add("Likes green tea", user_id="alice", infer=False)
        store = m.vector_store
        shadow = store.shadow(NEW.dimension, NEW.model_name)  # what reembed builds first
        shadow.insert([r.with_vector(np.ones(256, np.float32)) for r in store.list()[0]])
        # ... and the process dies here: no switch, no clean-up
    assert {"memkit__g1_records", "memkit__g1_vectors"} <= _tables(path)

    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                vector_store=SQLiteStore(str(path))) as m:
        assert [h.memory for h in m.search("tea", user_id="alice").results] == ["Likes green tea"]
        m.add("Likes coffee", user_id="alice", infer=False)
        assert m.reembed(NEW).memories == 2  # the leftover is rebuilt from scratch
    with Memory(llm=ScriptedLLM(), embedder=NEW, vector_store=SQLiteStore(str(path))) as m:
        assert [h.memory for h in m.search("coffee", user_id="alice", limit=1).results] == [
            "Likes coffee"]
    tables = _tables(path)
    assert "memkit__g1_records" in tables and "memkit_records" not in tables


class SwitchWaits(SQLiteStore):
    """A store whose switch, inside the re-embedding's transaction, waits for ``go``."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.inside, self.go = threading.Event(), threading.Event()

    def switch(self, shadow: VectorStore) -> None:
        self.inside.set()
        self.go.wait(60)
        super().switch(shadow)


def test_a_reembed_cancelled_during_its_switch_leaves_the_memory_on_the_new_model(
    tmp_path: Path,
) -> None:
    """The switch commits in a worker thread, which a cancellation does not stop: the memory
    must then embed with the new model, or it mixes the two models' vectors in one store."""
    path = str(tmp_path / "memkit.db")
    store = SwitchWaits(path)

    async def main(waits: ThreadPoolExecutor) -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor(1))  # the memory's thread work, in order
        async with AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store) as m:
            await m.add("Likes green tea", user_id="alice", infer=False)
            reembed = asyncio.create_task(m.reembed(NEW))
            await loop.run_in_executor(waits, store.inside.wait)
            reembed.cancel()
            with pytest.raises(asyncio.CancelledError):
                await reembed
            store.go.set()
            await asyncio.to_thread(lambda: None)  # runs once the switch's thread work is done
            assert m.embedder is NEW
            await m.add("Likes coffee", user_id="alice", infer=False)

    with ThreadPoolExecutor(1) as waits:  # the test's own waits, beside the memory's thread
        asyncio.run(main(waits))
    with Memory(llm=ScriptedLLM(), embedder=NEW, vector_store=SQLiteStore(path)) as m:
        assert sorted(h.memory for h in m.get_all(user_id="alice").results) == [
            "Likes coffee", "Likes green tea"]


class EmbedWaits(HashEmbedder):
    """The new model: its first call waits for ``go``."""

    def __init__(self) -> None:
        super().__init__(NEW.dimension, NEW.model_name)
        self.inside, self.go = threading.Event(), threading.Event()

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.inside.set()
        self.go.wait(60)
        return super().embed(texts)


def test_a_reembed_cancelled_while_it_embeds_leaves_the_old_model_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    new = EmbedWaits()
    failed_to_close: list[BaseException | None] = []  # "generator ignored GeneratorExit"
    others = sys.unraisablehook

    def unraisable(error: sys.UnraisableHookArgs) -> None:
        if getattr(error.object, "__qualname__", None) == "reembed_flow":
            failed_to_close.append(error.exc_value)
        else:
            others(error)

    monkeypatch.setattr(sys, "unraisablehook", unraisable)

    async def main(waits: ThreadPoolExecutor) -> None:
        async with AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                               vector_store=SQLiteStore(str(tmp_path / "memkit.db"))) as m:
            await m.add("Likes green tea", user_id="alice", infer=False)
            reembed = asyncio.create_task(m.reembed(new))
            await asyncio.get_running_loop().run_in_executor(waits, new.inside.wait)
            reembed.cancel()
            await asyncio.wait([reembed])
            assert reembed.cancelled()
            new.go.set()
            del reembed
            gc.collect()
            assert failed_to_close == []  # the abandoned re-embedding closed quietly
            assert m.embedder.model_name == "hash-bow-256"
            assert [h.memory for h in (await m.search("tea", user_id="alice")).results] == [
                "Likes green tea"]
            assert (await m.reembed(NEW)).memories == 1  # the leftover shadow is rebuilt

    with ThreadPoolExecutor(1) as waits:
        asyncio.run(main(waits))
