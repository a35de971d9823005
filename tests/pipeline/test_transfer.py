"""Export and import through Memory and AsyncMemory, on every store."""

from __future__ import annotations

import pytest

from memkit import ExportedMemory
from tests.pipeline.conftest import MakeMemory, facts


@pytest.mark.every_store
def test_export_then_import_keeps_ids_timestamps_and_history(make_memory: MakeMemory) -> None:
    source = make_memory()
    tea = source.add("I like green tea", user_id="alice", infer=False).results[0].id
    source.update(tea, "I like black tea")
    source.add("I live in Porto", user_id="bob", infer=False)

    everything = source.export()  # past versions too: the green-tea text lives on as one
    assert sorted(m.memory for m in everything) == [
        "I like black tea", "I like green tea", "I live in Porto"]
    alice = {m.id: m for m in source.export(user_id="alice")}
    assert tea in alice and len(alice) == 2
    assert [h.event for h in alice[tea].history] == ["ADD", "UPDATE"]

    target = make_memory()
    result = target.import_(everything)
    assert (result.imported, result.skipped, result.errors) == (3, 0, [])
    copy = target.get(tea)
    original = source.get(tea)
    assert copy is not None and original is not None
    assert copy.model_dump() == original.model_dump()
    assert target.history(tea) == alice[tea].history
    assert [v.memory for v in target.versions(tea)] == ["I like green tea", "I like black tea"]
    hits = target.search("black tea", user_id="alice", limit=1).results
    assert [h.id for h in hits] == [tea]


@pytest.mark.every_store
def test_import_skips_existing_ids_and_texts_and_reports_bad_rows(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add("I like green tea", user_id="alice", infer=False)
    exported = m.export()
    rows: list[ExportedMemory | dict[str, object]] = [
        *exported,                                            # same id: skipped
        {"memory": "I like green tea", "user_id": "alice"},   # same text, same scope: skipped
        {"memory": "I like green tea", "user_id": "carol"},   # another scope: imported
        {"memory": "   ", "user_id": "alice"},                # rejected
        {"memory": "no scope at all"},                        # rejected
    ]
    result = m.import_(rows)
    assert (result.imported, result.skipped) == (1, 2)
    assert len(result.errors) == 2 and all(e.startswith("memory ") for e in result.errors)
    assert [i.memory for i in m.get_all(user_id="carol").results] == ["I like green tea"]
    assert len(m.get_all(user_id="alice").results) == 1


def test_import_embeds_like_add(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.import_([{"id": "mem0-1", "memory": "User prefers dark mode", "user_id": "u"}])
    added = make_memory(llm=None)
    added.add("User prefers dark mode", user_id="u", infer=False)
    a = m.search("dark mode", user_id="u", limit=1).results[0]
    b = added.search("dark mode", user_id="u", limit=1).results[0]
    assert a.id == "mem0-1" and a.score == b.score
    assert [h.event for h in m.history("mem0-1")] == ["ADD"]


def test_add_results_and_delete_all_carry_the_scope(make_memory: MakeMemory) -> None:
    from memkit.testing import ScriptedLLM

    m = make_memory(ScriptedLLM([facts("User likes tea")]))
    added = m.add("I like tea", user_id="alice", agent_id="helper")
    assert [(e.event, e.user_id, e.agent_id, e.run_id) for e in added.results] == [
        ("ADD", "alice", "helper", None)]
    deleted = m.delete_all(user_id="alice")
    assert [(e.event, e.id, e.user_id, e.agent_id) for e in deleted.results] == [
        ("DELETE", added.results[0].id, "alice", "helper")]
