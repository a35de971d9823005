"""Graph-expanded search on every vector store: the memories reached through the graph are
scored by the store itself (one search narrowed to them), through Memory and AsyncMemory."""

from __future__ import annotations

from typing import Any

from memkit.testing import ScriptedLLM
from tests.pipeline.conftest import MakeMemory

FACTS = [("Alice is managed by Bob", "Alice", "managed by", "Bob"),
         ("Bob lives in Paris", "Bob", "lives in", "Paris"),
         ("Bob plays tennis on Sundays", "Bob", "plays", "tennis"),
         ("Bob owns a red bicycle", "Bob", "owns", "red bicycle"),
         ("Bob collects old stamps", "Bob", "collects", "old stamps"),
         ("Bob bakes sourdough bread", "Bob", "bakes", "bread"),
         ("Bob keeps two cats", "Bob", "keeps", "two cats"),
         ("Bob speaks Japanese", "Bob", "speaks", "Japanese")]


def _script() -> ScriptedLLM:
    answers: list[Any] = []
    for index, (text, source, relation, target) in enumerate(FACTS):
        answers.append({"facts": [text], "relations": [
            {"source": source, "source_type": "person", "relation": relation,
             "target": target, "target_type": "thing"}]})
        if index:  # the first add has nothing to decide against
            answers.append({"memory": [{"event": "ADD", "id": None, "text": text}]})
    return ScriptedLLM(answers)


def test_graph_search_orders_the_second_hop_by_its_own_similarity(
        make_memory: MakeMemory, tmp_path: Any) -> None:
    m = make_memory(_script(), config={"graph_store": {
        "provider": "sqlite", "config": {"path": str(tmp_path / "graph.db")}}})
    for text, *_ in FACTS:
        m.add(text, user_id="u")
    for i in range(8):  # closer to the question than any fact about Bob
        m.add(f"Which city hosts the team {i} offsite?", user_id="u", infer=False)
    question = "Which city does Alice's manager live in?"
    # vector scores: keyword scoring differs between engines
    plain = [i.memory for i in m.search(question, user_id="u", limit=4, mode="vector",
                                        graph=False).results]
    assert "Bob lives in Paris" not in plain
    found = m.search(question, user_id="u", limit=4, mode="vector").results
    # the seven facts behind the same link enter and are lifted as much; the Paris fact, the
    # nearest of them to the question, comes first (ordered by id it came first one time in
    # seven)
    assert [i.memory for i in found[:2]] == ["Alice is managed by Bob", "Bob lives in Paris"]
    assert found[1].score == found[2].score and found[2].memory.startswith("Bob")

