"""Issue 22's evidence, with ``graph_store: sqlite`` in the sqlite store's file: purging,
hard and soft deletes and reset reach the graph and the history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memkit import Memory
from memkit.testing import HashEmbedder, ScriptedLLM


def _memory(path: Path, llm: ScriptedLLM | None = None) -> Memory:
    config = {"vector_store": {"provider": "sqlite", "config": {"path": str(path)}},
              "graph_store": {"provider": "sqlite"}}
    return Memory(config, llm=llm or ScriptedLLM(), embedder=HashEmbedder())


def _extraction(fact: str, source: str, relation: str, target: str) -> dict[str, Any]:
    return {"facts": [fact], "relations": [{"source": source, "source_type": "person",
                                            "relation": relation, "target": target,
                                            "target_type": "place"}]}


def _alice(path: Path) -> tuple[Memory, str]:
    m = _memory(path, ScriptedLLM([_extraction("Alice lives in Lisbon", "Alice", "lives in",
                                               "Lisbon")]))
    [event] = m.add("I live in Lisbon", user_id="alice").results
    return m, event.id


def test_purge_removes_history_rows_and_graph_entities(tmp_path: Path) -> None:
    m, memory_id = _alice(tmp_path / "m.db")
    assert m.purge(user_id="alice", actor_id="dpo@example.com") == 1
    assert [(h.event, h.old_value, h.new_value, h.actor_id, h.user_id)
            for h in m.history(memory_id)] == [("PURGE", None, None, "dpo@example.com", "alice")]
    assert m.get_entities(user_id="alice") == []
    m.close()


def test_reset_clears_the_graph_also_after_reopening(tmp_path: Path) -> None:
    m, _ = _alice(tmp_path / "m.db")
    m.reset()
    assert m.get_entities(user_id="alice") == []
    m.close()
    again = _memory(tmp_path / "m.db")
    assert again.get_entities(user_id="alice") == []
    assert again.get_entity_graph("Alice", user_id="alice").relations == []
    again.close()


def test_a_soft_delete_closes_the_relations_only_that_memory_supported(tmp_path: Path) -> None:
    m, memory_id = _alice(tmp_path / "m.db")
    m.delete(memory_id)
    assert m.get_entity_graph("Alice", user_id="alice").relations == []
    [closed] = _all_relations(m)
    assert closed.valid_to is not None
    m.close()


def test_a_hard_delete_removes_the_entities_it_alone_supported(tmp_path: Path) -> None:
    m, memory_id = _alice(tmp_path / "m.db")
    m.delete(memory_id, hard=True)
    assert m.get_entities(user_id="alice") == []
    assert _all_relations(m) == []
    m.close()


def _all_relations(m: Memory) -> list[Any]:
    graph = m.graph_store
    assert graph is not None
    from memkit.graph.base import GraphScope

    return graph.relations(GraphScope("alice"), include_closed=True)
