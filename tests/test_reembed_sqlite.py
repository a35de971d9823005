"""Re-embedding a SQLite file: a file of the previous release, and a migration killed
before its switch (the contract on every store is in tests/pipeline/test_reembed.py)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memkit import ConfigError, Memory
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
