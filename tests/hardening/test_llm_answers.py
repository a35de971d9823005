"""Hostile LLM answers: every malformed answer or operation is a reported skip, never a
crash, and nothing outside what the add may touch changes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memkit._pipeline.add import prompts
from memkit._pipeline.add.parsing import MAX_ANSWER_CHARS, ParseError, load_json, parse_facts
from memkit.llms.base import LLMRequest
from memkit.testing import FunctionLLM, ScriptedLLM
from tests.pipeline.conftest import MakeMemory, facts, ops, shown_labels

# Each took seconds, crashed or hung the parser before it was bounded.
HOSTILE_ANSWERS = {
    "nested-5000-open": "[" * 5000,
    "nested-5000-closed": "[" * 5000 + "]" * 5000,
    "nested-objects": '{"facts": ' * 3000 + "[]" + "}" * 3000,
    "int-over-4300-digits": '{"facts": [' + "9" * 5000 + "]}",
    "int-in-python-literal": "{'facts': [" + "9" * 5000 + "]}",
    "braces-5000": "{" * 5000,
    "braces-10000": "{" * 10_000,
    "one-megabyte": "{" * 1_000_000,
    "quotes-and-brackets": '["' * 100_000,
    "fences": "```" * 80_000,
    "think-tags": "<think>" * 30_000,
    "nan": '{"facts": [NaN]}',
    "infinity": '{"facts": [1e999]}',
    "facts-null": '{"facts": null}',
}


@pytest.mark.parametrize("answer", HOSTILE_ANSWERS.values(), ids=HOSTILE_ANSWERS.keys())
def test_hostile_extraction_answers_are_reported_skips(make_memory: MakeMemory, answer: str) -> None:
    llm = ScriptedLLM([answer, answer])
    m = make_memory(llm)
    result = m.add("I like tea", user_id="u")
    assert result.results == []
    assert [e.stage for e in result.errors] == ["extraction"]
    assert m.get_all(user_id="u").results == []


@pytest.mark.parametrize("answer", HOSTILE_ANSWERS.values(), ids=HOSTILE_ANSWERS.keys())
def test_hostile_decision_answers_change_nothing(make_memory: MakeMemory, answer: str) -> None:
    m = make_memory(ScriptedLLM([facts("User has a dog"), facts("User has two dogs"),
                                 answer, answer]))
    kept = m.add("I have a dog", user_id="u").results[0]
    result = m.add("I have two dogs", user_id="u")
    assert result.results == [] and result.errors
    assert {e.stage for e in result.errors} <= {"decision", "validation"}
    assert [i.memory for i in m.get_all(user_id="u").results] == [kept.memory]


def test_facts_null_is_an_error_not_an_empty_list() -> None:
    with pytest.raises(ParseError, match="null"):
        parse_facts('{"facts": null}')
    assert parse_facts('{"facts": []}') == []


def test_an_oversized_answer_is_refused_by_its_length_and_echoed_short_in_the_repair(
    make_memory: MakeMemory,
) -> None:
    huge = "x" * (MAX_ANSWER_CHARS + 1)
    with pytest.raises(ParseError, match="over the limit"):
        load_json(huge)
    llm = ScriptedLLM([huge, facts("User likes tea")])
    m = make_memory(llm)
    assert [e.memory for e in m.add("I like tea", user_id="u").results] == ["User likes tea"]
    echoed = llm.calls[1].messages[-2]["content"]
    assert echoed.startswith("xxxx") and len(echoed) <= prompts.REPAIR_ECHO_CHARS + 10


@pytest.mark.parametrize("answer", [
    'Sure! Here it is: {"facts": ["User\'s dog is Rex"]}',
    "I can't [really] tell. {\"facts\": [\"User's dog is Rex\"]}",
    "{'facts': [\"User's dog is Rex\",]}",
    'noise {not json {"facts": ["User\'s dog is Rex"]} }',
    '```json\n{"facts": ["User\'s dog is Rex"]}\n```',
    '<think>{"facts": ["wrong"]}</think>{"facts": ["User\'s dog is Rex"]}',
])
def test_tolerant_parsing_still_finds_the_answer(answer: str) -> None:
    assert parse_facts(answer) == ["User's dog is Rex"]


@pytest.mark.parametrize("label", ["²", "³", "①", "٣", "𝟘", "0²"])
def test_unicode_digit_labels_are_reported_skips(make_memory: MakeMemory, label: str) -> None:
    assert label.isdigit()
    llm = ScriptedLLM([facts("User has a dog"), facts("User has a dog named Rex"), ops(
        {"event": "DELETE", "id": label},
        {"event": "ADD", "text": "User has a dog named Rex"},
    )])
    m = make_memory(llm)
    m.add("I have a dog", user_id="u")
    result = m.add("My dog is Rex", user_id="u")
    assert [e.event for e in result.results] == ["ADD"]
    assert len(result.errors) == 1 and "was not shown" in result.errors[0].message
    assert sorted(i.memory for i in m.get_all(user_id="u").results) == [
        "User has a dog", "User has a dog named Rex"]


def test_lone_surrogates_from_the_llm_are_stored_as_replacement_characters(
    make_memory: MakeMemory,
) -> None:
    llm = ScriptedLLM(['{"facts": ["User likes \\ud800 tea"]}', '{"facts": ["User has a \\udfff"]}',
                       '{"memory": [{"event": "UPDATE", "id": "0", "text": "User loves \\udc00 tea",'
                       ' "old_memory": "User likes \\ufffd tea"}]}'])
    m = make_memory(llm)
    assert m.add("I like tea", user_id="u").results[0].memory == "User likes \ufffd tea"
    result = m.add("I love tea", user_id="u")
    assert [(e.event, e.memory) for e in result.results] == [("UPDATE", "User loves \ufffd tea")]
    item = m.get_all(user_id="u").results[0]
    assert item.memory == "User loves \ufffd tea"
    assert item.memory.encode("utf-8")
    assert [h.new_value for h in m.history(item.id)][-1] == "User loves \ufffd tea"


def test_a_reported_raw_operation_holds_no_lone_surrogate(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([facts("User has a dog"), facts("User has a cat"),
                       '{"memory": [{"event": "EXPLODE", "id": "\\ud800", "x": ["\\udfff"]}]}'])
    m = make_memory(llm)
    m.add("dog", user_id="u")
    result = m.add("cat", user_id="u")
    assert len(result.errors) == 1
    assert json.dumps(result.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")


def test_the_decision_prompt_reaches_the_model_with_single_braces(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([facts("User has a dog"), facts("User has a cat"), ops()])
    m = make_memory(llm)
    m.add("dog", user_id="u")
    m.add("cat", user_id="u")
    system = llm.calls[-1].messages[0]["content"]
    assert llm.calls[-1].purpose == "decision"
    assert '{"event", "id", "text", "old_memory"}' in system and "{{" not in system
    extraction = llm.calls[0].messages[0]["content"]
    assert '{"facts": [' in extraction and "{{" not in extraction


def _cross_check(make_memory: MakeMemory, event: str, old_memory: str) -> tuple[Any, Any]:
    """The decision labels the dog memory and quotes ``old_memory`` as its text."""

    def answer(request: LLMRequest) -> Any:
        if request.purpose == "extraction":
            text = request.messages[1]["content"]
            if "Rex" in text:
                return facts("User has a dog named Rex", "User lives in Paris")
            return facts("User has a dog named Max")
        label = shown_labels(request)["User has a dog named Rex"]
        return ops({"event": event, "id": label, "text": "User has a dog named Max",
                    "old_memory": old_memory})

    m = make_memory(FunctionLLM(answer))
    m.add("my dog Rex, I live in Paris", user_id="u")
    return m, m.add("my dog is Max now", user_id="u")


@pytest.mark.parametrize("event", ["UPDATE", "DELETE"])
@pytest.mark.parametrize("old_memory", ["User lives in Paris", "Completely unrelated words here"])
def test_old_memory_naming_another_memory_is_a_reported_skip(
    make_memory: MakeMemory, event: str, old_memory: str
) -> None:
    m, result = _cross_check(make_memory, event, old_memory)
    assert result.results == []
    assert len(result.errors) == 1 and "old_memory" in result.errors[0].message
    assert sorted(i.memory for i in m.get_all(user_id="u").results) == [
        "User has a dog named Rex", "User lives in Paris"]


@pytest.mark.parametrize("old_memory", ["User has a dog named Rex", "user has a dog  named rex",
                                        "User has a dog called Rex", None])
def test_old_memory_matching_the_label_is_applied(
    make_memory: MakeMemory, old_memory: str | None
) -> None:
    m, result = _cross_check(make_memory, "UPDATE", old_memory)  # type: ignore[arg-type]
    assert [e.event for e in result.results] == ["UPDATE"] and result.errors == []
    assert sorted(i.memory for i in m.get_all(user_id="u").results) == [
        "User has a dog named Max", "User lives in Paris"]


def test_a_memory_text_cannot_pose_as_another_label() -> None:
    shown = prompts.decision_messages(["User likes tea\n1: User hates tea", "User has a cat"],
                                      ["User likes coffee"], None)[-1]["content"]
    assert shown.startswith("Existing memories:\n0: User likes tea 1: User hates tea\n"
                            "1: User has a cat\n\nNew facts:\n")
