"""``history.db_path`` (mem0's ``history_db_path``) or a sqlite graph's ``path`` naming the
sqlite store's own file: they join the store's connection and transactions, as they do
by default, instead of failing with "database is locked" on the first add."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from memkit import Memory
from memkit.testing import HashEmbedder, ScriptedLLM


def _config(path: Path, other: str) -> dict[str, Any]:
    return {"vector_store": {"provider": "sqlite", "config": {"path": str(path)}},
            "history": {"db_path": other},
            "graph_store": {"provider": "sqlite", "config": {"path": other}}}


def test_the_history_and_graph_in_the_stores_own_file_share_its_transactions(
        tmp_path: Path) -> None:
    path = tmp_path / "memkit.db"
    spelled = str(tmp_path / "sub" / ".." / "memkit.db")  # the same file, named otherwise
    (tmp_path / "sub").mkdir()
    llm = ScriptedLLM([{"facts": ["Alice lives in Lisbon"], "relations": [
        {"source": "Alice", "source_type": "person", "relation": "lives in",
         "target": "Lisbon", "target_type": "city"}]}])
    with Memory(_config(path, spelled), llm=llm, embedder=HashEmbedder()) as m:
        [event] = m.add("I live in Lisbon", user_id="alice").results
        assert [h.event for h in m.history(event.id)] == ["ADD"]
        assert m.graph_store is not None and m.graph_store.joins(m.vector_store)
        assert [e.name for e in m.get_entities(user_id="alice")] == ["Alice", "Lisbon"]
    with sqlite3.connect(path) as conn:  # the default tables of the store's file
        assert conn.execute("SELECT event FROM memkit_history").fetchall() == [
            ("ADD",), ("ENTITY_ADD",), ("ENTITY_ADD",), ("RELATION_ADD",)]
        assert conn.execute("SELECT count(*) FROM memkit_graph_entities").fetchone() == (2,)


def test_a_history_file_of_its_own_stays_apart(tmp_path: Path) -> None:
    other = tmp_path / "history.db"
    config = _config(tmp_path / "memkit.db", str(other))
    del config["graph_store"]
    with Memory(config, embedder=HashEmbedder(), llm=ScriptedLLM()) as m:
        m.add("Lives in Lisbon", user_id="alice", infer=False)
    with sqlite3.connect(other) as conn:
        assert conn.execute("SELECT event FROM history").fetchall() == [("ADD",)]
