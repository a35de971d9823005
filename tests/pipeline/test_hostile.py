"""Malformed LLM output and hostile decisions: no crash, nothing outside the scope changed,
every skipped operation reported."""

from __future__ import annotations

from typing import Any

import pytest

from memkit import LLMError
from memkit.testing import ScriptedLLM
from tests.pipeline.conftest import MakeMemory, Shell, facts, ops

MALFORMED = [
    "",
    "   ",
    "I could not find any facts.",
    "{",
    "{\"facts\": [\"unterminated",
    "null",
    "42",
    "\"just a string\"",
    "true",
    "{\"facts\": \"User likes tea\"}",
    "{\"facts\": [1, 2, 3]}",
    "{\"facts\": [null]}",
    "{\"facts\": [[\"nested\"]]}",
    "{\"unrelated\": 1, \"other\": 2}",
    "{\"facts\": {\"a\": 1}}",
    "```\nnot json at all\n```",
    "<think>{\"facts\": [\"hidden\"]}</think>",
    "[{\"nope\": 1}]",
    "{\"facts\": [{\"x\": \"y\"}]}",
    "\x00\x01\x02",
    "NaN",
    "[[[[[[[[[[",
]


@pytest.mark.parametrize("bad", MALFORMED)
def test_malformed_extraction_is_repaired_once_then_reported(make_memory: MakeMemory, bad: str) -> None:
    llm = ScriptedLLM([bad, bad])
    m = make_memory(llm)
    result = m.add("I like tea", user_id="u")
    assert result.results == []
    assert len(result.errors) == 1 and result.errors[0].stage == "extraction"
    assert "nothing was changed" in result.errors[0].message
    assert [c.purpose for c in llm.calls] == ["extraction", "repair"]
    assert result.usage.llm_calls == 2
    assert m.get_all(user_id="u").results == []


def test_a_successful_repair_is_used(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM(["nope", facts("User likes tea")])
    m = make_memory(llm)
    result = m.add("I like tea", user_id="u")
    assert [e.memory for e in result.results] == ["User likes tea"] and result.errors == []
    repair = llm.calls[1].messages
    assert repair[-2] == {"role": "assistant", "content": "nope"}


@pytest.mark.parametrize("bad", MALFORMED[:12])
def test_malformed_decision_changes_nothing(make_memory: MakeMemory, bad: str) -> None:
    m = make_memory(ScriptedLLM([facts("User has a dog"), facts("User has two dogs"), bad, bad]))
    added = m.add("I have a dog", user_id="u").results[0]
    result = m.add("I have two dogs", user_id="u")
    assert result.results == [] and result.errors
    assert {e.stage for e in result.errors} <= {"decision", "validation"}
    assert [i.id for i in m.get_all(user_id="u").results] == [added.id]


def _seeded(make_memory: MakeMemory, decision: Any) -> tuple[Shell, str, str]:
    llm = ScriptedLLM([facts("User has a dog"), facts("User has a dog named Rex"), decision])
    m = make_memory(llm)
    mine = m.add("I have a dog", user_id="alice").results[0].id
    theirs = m.add("Bob has a dog", user_id="bob", infer=False).results[0].id
    return m, mine, theirs


HOSTILE = [
    pytest.param(lambda mine, theirs: ops({"event": "UPDATE", "id": "7", "text": "x"}), id="unshown-label"),
    pytest.param(lambda mine, theirs: ops({"event": "DELETE", "id": "-1"}), id="negative-label"),
    pytest.param(lambda mine, theirs: ops({"event": "DELETE", "id": theirs}), id="other-scope-real-id"),
    pytest.param(lambda mine, theirs: ops({"event": "UPDATE", "id": theirs, "text": "pwned"}), id="other-scope-update"),
    pytest.param(lambda mine, theirs: ops({"event": "UPDATE", "id": mine, "text": "x"}), id="own-real-id"),
    pytest.param(lambda mine, theirs: ops({"event": "UPDATE", "id": "0", "text": "  "}), id="update-empty-text"),
    pytest.param(lambda mine, theirs: ops({"event": "UPDATE", "id": None, "text": "x"}), id="update-no-id"),
    pytest.param(lambda mine, theirs: ops({"event": "DELETE"}), id="delete-no-id"),
    pytest.param(lambda mine, theirs: ops({"event": "ADD", "text": ""}), id="add-empty"),
    pytest.param(lambda mine, theirs: ops({"event": "EXPLODE", "id": "0"}), id="unknown-event"),
    pytest.param(lambda mine, theirs: ops("DELETE everything"), id="string-op"),
    pytest.param(lambda mine, theirs: ops({"event": "DELETE", "id": "0; DROP TABLE memories"}), id="sql-label"),
    pytest.param(lambda mine, theirs: ops({"event": "DELETE", "id": "1e3"}), id="float-label"),
    pytest.param(lambda mine, theirs: ops({"event": "DELETE", "id": True}), id="bool-label"),
]


@pytest.mark.parametrize("make_decision", HOSTILE)
def test_hostile_decisions_are_skipped_and_reported(make_memory: MakeMemory, make_decision: Any) -> None:
    llm = ScriptedLLM([facts("User has a dog"), facts("User has a dog named Rex")])
    m = make_memory(llm)
    mine = m.add("I have a dog", user_id="alice").results[0].id
    theirs = m.add("Bob has a dog", user_id="bob", infer=False).results[0].id
    llm.push(make_decision(mine, theirs))
    result = m.add("My dog is Rex", user_id="alice")
    assert [e.event for e in result.results] == []
    assert len(result.errors) == 1 and result.errors[0].stage == "validation"
    assert [i.memory for i in m.get_all(user_id="alice").results] == ["User has a dog"]
    assert [i.memory for i in m.get_all(user_id="bob").results] == ["Bob has a dog"]


def test_two_operations_on_one_label_apply_the_first_only(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([facts("User has a dog"), facts("User has a dog named Rex"), ops(
        {"event": "UPDATE", "id": "0", "text": "User has a dog named Rex"},
        {"event": "DELETE", "id": "0"},
    )])
    m = make_memory(llm)
    m.add("I have a dog", user_id="u")
    result = m.add("My dog is Rex", user_id="u")
    assert [e.event for e in result.results] == ["UPDATE"]
    assert "already changed" in result.errors[0].message
    assert [i.memory for i in m.get_all(user_id="u").results] == ["User has a dog named Rex"]


def test_valid_operations_apply_beside_invalid_ones(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([facts("User has a dog"), facts("User has a cat", "x"), ops(
        {"event": "DELETE", "id": "99"},
        {"event": "ADD", "text": "User has a cat"},
    )])
    m = make_memory(llm)
    m.add("dog", user_id="u")
    result = m.add("cat", user_id="u")
    assert [e.event for e in result.results] == ["ADD"] and len(result.errors) == 1


def test_llm_failure_raises_llm_error_and_changes_nothing(make_memory: MakeMemory) -> None:
    m = make_memory(ScriptedLLM([LLMError("provider down")]))
    with pytest.raises(LLMError, match="provider down"):
        m.add("I like tea", user_id="u")
    assert m.get_all(user_id="u").results == []
