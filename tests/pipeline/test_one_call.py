"""``add_mode="one_call"``: extraction and decisions in one LLM answer, against the memories
the conversation's own messages find. The same events, history, dedup, labels-not-ids
checks and malformed-answer handling as the two-call add (test_inference.py,
test_errors.py), through Memory and AsyncMemory."""

from __future__ import annotations

from typing import Any

import pytest

from memkit import ConfigError, InvalidArgument, LLMError, Memory
from memkit.llms.base import LLMRequest
from memkit.testing import FunctionLLM, ScriptedLLM
from tests.pipeline.conftest import MakeMemory, ops, shown_labels

ONE_CALL = {"add_mode": "one_call"}


def add(text: str, kind: str | None = None, importance: float | None = None) -> dict[str, Any]:
    return {"event": "ADD", "text": text, "type": kind, "importance": importance}


def test_one_answer_extracts_and_adds_with_type_and_importance(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([ops(add("User likes Python", "preference", 0.8),
                           {**add("Ana lives in Lisbon", "fact", 0.6), "subject": "Ana"})])
    m = make_memory(llm, config=ONE_CALL)
    result = m.add("I like Python and my sister Ana lives in Lisbon", user_id="u")
    assert [(e.event, e.memory) for e in result.results] == [
        ("ADD", "User likes Python"), ("ADD", "Ana lives in Lisbon")]
    assert result.usage.llm_calls == 1 and result.errors == []
    assert [c.purpose for c in llm.calls] == ["add"]
    prompt = llm.calls[0].messages[-1]["content"]
    assert prompt == ("Existing memories:\n(none)\n\nConversation:\n"
                      "user: I like Python and my sister Ana lives in Lisbon")
    stored = {i.memory: (i.memory_type, i.importance, i.metadata)
              for i in m.get_all(user_id="u").results}
    assert stored == {"User likes Python": ("preference", 0.8, {}),
                      "Ana lives in Lisbon": ("fact", 0.6, {"subject": "Ana"})}


def test_the_conversation_finds_the_memories_it_may_change_shown_by_label(
        make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([
        ops(add("User's favourite language is Python")),
        ops({"event": "UPDATE", "id": "0", "text": "User's favourite language is Rust",
             "old_memory": "User's favourite language is Python", "type": "preference",
             "importance": 0.9}),
    ])
    m = make_memory(llm, config=ONE_CALL)
    added = m.add("My favourite language is Python", user_id="u").results[0]
    m.add("The weather is nice", user_id="someone else", infer=False)
    result = m.add("Actually my favourite language is Rust now", user_id="u")
    event = result.results[0]
    assert (event.event, event.id, event.old_memory, event.new_memory) == (
        "UPDATE", added.id, "User's favourite language is Python",
        "User's favourite language is Rust")
    request = llm.calls[-1]
    assert shown_labels(request) == {"User's favourite language is Python": "0"}
    assert added.id not in request.messages[-1]["content"]  # a label, never the real id
    assert "user: Actually my favourite language is Rust now" in request.messages[-1]["content"]
    item = m.get(added.id)
    assert (item.memory, item.memory_type, item.importance) == (
        "User's favourite language is Rust", "preference", 0.9)
    assert [h.event for h in m.history(added.id)] == ["ADD", "UPDATE"]
    assert result.usage.llm_calls == 1


def test_delete_and_none_in_one_answer(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([
        ops(add("User has a dog"), add("User lives in Paris")),
        ops({"event": "DELETE", "id": "0", "old_memory": "User has a dog"},
            {"event": "NONE", "id": "1"}),
    ])
    m = make_memory(llm, config=ONE_CALL)
    dog, paris = m.add("I have a dog and I live in Paris", user_id="u").results
    result = m.add("I don't have a dog anymore, still in Paris", user_id="u")
    assert m.get(paris.id).metadata == {"confirmations": 1}  # NONE: said again
    labels = shown_labels(llm.calls[-1])
    assert labels == {"User has a dog": "0", "User lives in Paris": "1"}
    assert sorted((e.event, e.id) for e in result.results) == sorted(
        [("DELETE", dog.id), ("NONE", paris.id)])
    assert m.get(dog.id) is None and m.get(paris.id) is not None
    assert [h.event for h in m.history(dog.id)] == ["ADD", "DELETE"]


@pytest.mark.every_store
def test_an_add_of_a_stored_text_is_none(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([ops(add("User likes Python")),
                       {"facts": ["User likes Python"]}])  # facts alone: each one an ADD
    m = make_memory(llm, config=ONE_CALL)
    first = m.add("I like Python", user_id="u").results[0]
    second = m.add("I really like Python", user_id="u")
    assert [(e.event, e.id) for e in second.results] == [("NONE", first.id)]
    assert len(m.get_all(user_id="u").results) == 1 and second.errors == []


@pytest.mark.parametrize("label", ["1", "7", "-1", "²"])
def test_an_id_that_was_not_shown_is_rejected(make_memory: MakeMemory, label: str) -> None:
    llm = ScriptedLLM([ops(add("User has a dog"))])
    m = make_memory(llm, config=ONE_CALL)
    dog = m.add("I have a dog", user_id="u").results[0]
    llm.push(ops({"event": "DELETE", "id": label},
                 {"event": "UPDATE", "id": dog.id, "text": "User has a cat"}))
    result = m.add("my dog", user_id="u")
    assert result.results == []
    assert [e.stage for e in result.errors] == ["validation", "validation"]
    assert all("was not shown" in e.message for e in result.errors)
    assert [i.memory for i in m.get_all(user_id="u").results] == ["User has a dog"]


def test_old_memory_naming_another_memory_is_rejected(make_memory: MakeMemory) -> None:
    def answer(request: LLMRequest) -> Any:
        if "(none)" in request.messages[-1]["content"]:
            return ops(add("User has a dog named Rex"), add("User lives in Paris"))
        label = shown_labels(request)["User has a dog named Rex"]
        return ops({"event": "DELETE", "id": label, "old_memory": "User lives in Paris"})

    m = make_memory(FunctionLLM(answer), config=ONE_CALL)
    m.add("my dog Rex, I live in Paris", user_id="u")
    result = m.add("my dog Rex in Paris", user_id="u")
    assert result.results == [] and "old_memory" in result.errors[0].message
    assert len(m.get_all(user_id="u").results) == 2


def test_a_malformed_answer_is_repaired_once_then_reported(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM(["Sure! Here you go", ops(add("User likes tea")),
                       "still no JSON", "nor now"])
    m = make_memory(llm, config=ONE_CALL)
    repaired = m.add("I like tea", user_id="u")
    assert [e.memory for e in repaired.results] == ["User likes tea"]
    assert [c.purpose for c in llm.calls] == ["add", "repair"]
    assert repaired.usage.llm_calls == 2
    failed = m.add("I like coffee", user_id="u")
    assert failed.results == [] and [e.stage for e in failed.errors] == ["extraction"]
    assert "after one repair attempt" in failed.errors[0].message
    assert [i.memory for i in m.get_all(user_id="u").results] == ["User likes tea"]


def test_a_failed_call_raises_or_with_degrade_is_reported(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([LLMError("provider down"), LLMError("provider down")])
    m = make_memory(llm, config=ONE_CALL)
    with pytest.raises(LLMError):
        m.add("I like tea", user_id="u")
    result = m.add("I like tea", user_id="u", on_error="degrade")
    assert result.results == [] and [e.stage for e in result.errors] == ["extraction"]
    assert m.get_all(user_id="u").results == []


def test_a_dry_run_says_what_it_would_do_and_writes_nothing(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([ops(add("User likes tea"))])
    m = make_memory(llm, config=ONE_CALL)
    result = m.add("I like tea", user_id="u", dry_run=True)
    assert [(e.event, e.memory) for e in result.results] == [("ADD", "User likes tea")]
    assert m.get_all(user_id="u").results == []


def test_relations_come_in_the_same_answer(make_memory: MakeMemory, tmp_path: Any) -> None:
    relation = {"source": "user", "source_type": "person", "relation": "works_at",
                "target": "Acme", "target_type": "organization"}
    llm = ScriptedLLM([{"memory": [add("User works at Acme")], "relations": [relation]}])
    m = make_memory(llm, config={**ONE_CALL, "graph_store": {
        "provider": "sqlite", "config": {"path": str(tmp_path / "graph.db")}}})
    result = m.add("I work at Acme", user_id="u", entities=["Project Falcon"])
    assert [(r.source, r.relation, r.target) for r in result.relations] == [
        ("user", "WORKS_AT", "Acme")]
    assert sorted(e.name for e in result.entities) == ["Acme", "Project Falcon", "user"]
    falcon = m.get_entity_graph("Project Falcon", user_id="u", include_memories=True)
    assert [i.memory for i in falcon.memories] == ["User works at Acme"]
    assert llm.calls[0].json_schema is not None
    assert "relations" in llm.calls[0].json_schema["properties"]
    assert '{"memory": [...], "relations": [...]}' in llm.calls[0].messages[0]["content"]


def test_custom_prompts_are_refused_with_one_call(make_memory: MakeMemory) -> None:
    with pytest.raises(ConfigError, match="one_call"):
        Memory({**ONE_CALL, "custom_prompts": {"fact_extraction": "EXTRACT!"}})
    m = make_memory(ScriptedLLM(), config=ONE_CALL)
    with pytest.raises(InvalidArgument, match="one_call"):
        m.add("I like tea", user_id="u", prompt="Extract tea facts.")
