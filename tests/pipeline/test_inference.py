"""Update intelligence: the LLM's ADD/UPDATE/DELETE/NONE decisions, validated and applied."""

from __future__ import annotations

import pytest

from memkit.testing import ScriptedLLM
from tests.pipeline.conftest import MakeMemory, facts, ops


def test_add_extracts_facts_and_adds_them_without_a_decision_call(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([facts("User likes Python", "User lives in Lisbon")])
    m = make_memory(llm)
    result = m.add("I like Python and I live in Lisbon", user_id="u")
    assert [(e.event, e.memory) for e in result.results] == [
        ("ADD", "User likes Python"), ("ADD", "User lives in Lisbon"),
    ]
    assert result.usage.llm_calls == 1 and result.errors == []
    assert [c.purpose for c in llm.calls] == ["extraction"]
    assert "I like Python and I live in Lisbon" in llm.calls[0].messages[-1]["content"]
    assert {i.memory for i in m.get_all(user_id="u").results} == {
        "User likes Python", "User lives in Lisbon",
    }


@pytest.mark.every_store
def test_exact_duplicate_fact_is_none_without_asking(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([facts("User likes Python"), facts("User likes Python")])
    m = make_memory(llm)
    first = m.add("I like Python", user_id="u").results[0]
    second = m.add("I really like Python", user_id="u")
    assert [(e.event, e.id) for e in second.results] == [("NONE", first.id)]
    assert len(llm.calls) == 2
    assert len(m.get_all(user_id="u").results) == 1


@pytest.mark.every_store
def test_duplicate_add_decided_by_the_llm_becomes_none(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([
        facts("User likes Python"),
        facts("User enjoys Python"),
        ops({"event": "ADD", "text": "User likes Python"}),
    ])
    m = make_memory(llm)
    first = m.add("I like Python", user_id="u").results[0]
    second = m.add("I enjoy Python", user_id="u")
    assert [(e.event, e.id) for e in second.results] == [("NONE", first.id)]
    assert len(m.get_all(user_id="u").results) == 1


def test_contradiction_updates_the_existing_memory(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([
        facts("User's favourite language is Python"),
        facts("User's favourite language is Rust"),
        ops({"event": "UPDATE", "id": "0", "text": "User's favourite language is Rust",
             "old_memory": "User's favourite language is Python"}),
    ])
    m = make_memory(llm)
    added = m.add("My favourite language is Python", user_id="u").results[0]
    result = m.add("Actually my favourite language is Rust now", user_id="u")
    event = result.results[0]
    assert (event.event, event.id) == ("UPDATE", added.id)
    assert event.old_memory == "User's favourite language is Python"
    assert event.new_memory == "User's favourite language is Rust"
    assert result.usage.llm_calls == 2
    decision = llm.calls[-1]
    assert decision.purpose == "decision"
    shown = decision.messages[-1]["content"]
    assert "\n0: User's favourite language is Python\n" in shown  # a label, never the real id
    assert added.id not in shown
    assert [i.memory for i in m.get_all(user_id="u").results] == [
        "User's favourite language is Rust"
    ]
    assert [h.event for h in m.history(added.id)] == ["ADD", "UPDATE"]


def test_negation_deletes_the_existing_memory(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([
        facts("User has a dog"),
        facts("User no longer has a dog"),
        ops({"event": "DELETE", "id": 0}),
    ])
    m = make_memory(llm)
    added = m.add("I have a dog", user_id="u").results[0]
    result = m.add("I don't have a dog anymore", user_id="u")
    assert [(e.event, e.id, e.memory) for e in result.results] == [
        ("DELETE", added.id, "User has a dog"),
    ]
    assert m.get(added.id) is None
    assert [h.event for h in m.history(added.id)] == ["ADD", "DELETE"]


def test_none_decision_changes_nothing(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([
        facts("User has a dog"), facts("User owns a dog"), ops({"event": "NONE", "id": "0"}),
    ])
    m = make_memory(llm)
    added = m.add("I have a dog", user_id="u").results[0]
    result = m.add("I own a dog", user_id="u")
    assert [(e.event, e.id) for e in result.results] == [("NONE", added.id)]
    assert [i.memory for i in m.get_all(user_id="u").results] == ["User has a dog"]


def test_mixed_operations_in_one_decision(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([
        facts("User has a dog", "User lives in Paris"),
        facts("User has a cat", "User lives in Rome", "User plays chess"),
        {"operations": [
            {"event": "delete", "id": "0"},
            {"event": "UPDATE", "id": "1", "data": "User lives in Rome"},
            {"event": "ADD", "text": "User has a cat"},
            {"event": "ADD", "data": "User plays chess"},
        ]},
    ])
    m = make_memory(llm)
    m.add("dog and Paris", user_id="u")
    result = m.add("cat, Rome and chess", user_id="u")
    assert sorted(e.event for e in result.results) == ["ADD", "ADD", "DELETE", "UPDATE"]
    memories = {i.memory for i in m.get_all(user_id="u").results}
    assert "User lives in Rome" in memories and "User has a cat" in memories
    assert "User plays chess" in memories and len(memories) == 3


def test_no_facts_means_no_change_and_one_call(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([facts()])
    m = make_memory(llm)
    result = m.add("hello there!", user_id="u")
    assert result.results == [] and result.errors == [] and result.usage.llm_calls == 1


def test_custom_prompt_argument_replaces_the_extraction_prompt(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([facts("Order 42 shipped")])
    m = make_memory(llm)
    m.add("order 42 shipped", user_id="u", prompt="Extract order facts as JSON.")
    assert llm.calls[0].messages[0] == {"role": "system", "content": "Extract order facts as JSON."}


def test_custom_prompts_from_config(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([facts("A"), facts("B"), ops({"event": "ADD", "text": "B"})])
    m = make_memory(llm, config={"custom_prompts": {"fact_extraction": "EXTRACT!",
                                                    "update_decision": "DECIDE!"}})
    m.add("a", user_id="u")
    m.add("b", user_id="u")
    assert llm.calls[0].messages[0]["content"] == "EXTRACT!"
    assert llm.calls[2].messages[0]["content"] == "DECIDE!"


def test_filters_restrict_which_memories_the_decision_sees(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([facts("work: uses Python"), facts("home: uses Python at home"),
                       facts("home: uses Rust at home")])
    m = make_memory(llm)
    m.add("x", user_id="u", metadata={"ctx": "work"})
    m.add("y", user_id="u", metadata={"ctx": "home"}, filters={"ctx": "home"})
    # The first add's memory is hidden by the filter, so nothing is shown and no decision is made.
    assert [c.purpose for c in llm.calls] == ["extraction", "extraction"]
    llm.push(ops({"event": "UPDATE", "id": "0", "text": "home: uses Rust at home"}))
    result = m.add("z", user_id="u", metadata={"ctx": "home"}, filters={"ctx": "home"})
    assert result.results[0].event == "UPDATE"
    assert "work: uses Python" not in llm.calls[-1].messages[-1]["content"]


def test_usage_sums_every_call(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([facts("A fact"), facts("A new fact"), ops({"event": "ADD", "text": "B"})])
    m = make_memory(llm)
    m.add("a", user_id="u")
    result = m.add("b", user_id="u")
    assert result.usage.llm_calls == 2
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    assert result.usage.cost_usd is None


@pytest.mark.parametrize("answer", [
    "```json\n{\"facts\": [\"User likes tea\"]}\n```",
    "Sure! Here you go: {\"facts\": [\"User likes tea\"]} Let me know.",
    "[\"User likes tea\"]",
    "{\"facts\": [\"User likes tea\",]}",
    "{'facts': ['User likes tea']}",
    "<think>hmm</think>{\"facts\": [{\"fact\": \"User likes tea\"}]}",
])
def test_tolerant_parsing_of_extraction_answers(make_memory: MakeMemory, answer: str) -> None:
    m = make_memory(ScriptedLLM([answer]))
    result = m.add("I like tea", user_id="u")
    assert [e.memory for e in result.results] == ["User likes tea"] and result.errors == []
