"""The add flow against a fake effect handler: no store, no history, no model, no driver.

A flow is a generator of effects (memkit._pipeline.effects); ``drive`` below plays
the driver, and each test's handler answers the effects the way a store and an LLM
would. What these tests pin is decision logic: which calls the flow makes, what it
writes, and what it reports.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import pytest

from memkit._errors import LLMError, MemkitError
from memkit._pipeline.add.flow import AddRequest, add_flow
from memkit._pipeline.effects import (
    AppendHistory,
    Complete,
    Embed,
    Insert,
    ListRecords,
    Search,
    Transaction,
    Update,
)
from memkit._pipeline.inputs import Scope, text_hash
from memkit.llms.base import LLMResponse
from memkit.stores.base import Hit, Record

NOW = "2025-03-01T12:00:00+00:00"


def drive(flow: Generator[Any, Any, Any], handle: Callable[[Any], Any]) -> Any:
    """What the drivers do: send each effect's result back; a memkit error is thrown in."""
    result: Any = None
    error: MemkitError | None = None
    while True:
        try:
            effect = flow.throw(error) if error is not None else flow.send(result)
        except StopIteration as stop:
            return stop.value
        try:
            result, error = handle(effect), None
        except MemkitError as exc:
            result, error = None, exc


class Fake:
    """Answers effects: scripted LLM answers, one-hot vectors, ``held`` as the search hits;
    a transaction's write flow is driven here too, and its writes are kept."""

    def __init__(self, *answers: object, held: tuple[str, ...] = ()) -> None:
        self.answers = [a if isinstance(a, str | Exception) else json.dumps(a) for a in answers]
        self.held = [_record(f"m{i}", text) for i, text in enumerate(held)]
        self.prompts: list[str] = []
        self.writes: list[Any] = []

    def __call__(self, effect: Any) -> Any:
        match effect:
            case Complete(request):
                self.prompts.append(request.purpose)
                answer = self.answers.pop(0)
                if isinstance(answer, Exception):
                    raise answer
                return LLMResponse(answer)
            case Embed(texts):
                return np.eye(len(texts), 8, dtype=np.float32)
            case Search():
                return [Hit(record, 0.9) for record in self.held]
            case Transaction(_, flow):
                return drive(flow, self)
            case ListRecords():
                return [], None  # no duplicate in the store
            case Insert() | Update() | AppendHistory():
                self.writes.append(effect)
                return None
        raise AssertionError(f"unexpected effect {effect!r}")


def _record(id: str, text: str) -> Record:
    return Record(id=id, memory=text, hash=text_hash(text), created_at=NOW, updated_at=NOW,
                  user_id="u", valid_from=NOW, confidence=1.0)


def request(text: str, **overrides: Any) -> AddRequest:
    fields: dict[str, Any] = {
        "messages": [{"role": "user", "content": text}], "scope": Scope(user_id="u"),
        "metadata": {}, "filters": None, "prompt": None, "infer": True, "timestamp": NOW,
    }
    return AddRequest(**{**fields, **overrides})


def test_new_facts_are_added_without_a_decision_call() -> None:
    fake = Fake({"facts": ["Likes tea", "Lives in Lisbon"]})
    result = drive(add_flow(request("I like tea and live in Lisbon")), fake)
    assert fake.prompts == ["extraction"]  # nothing held: no decision to ask for
    assert [(e.event, e.memory) for e in result.results] == [("ADD", "Likes tea"),
                                                             ("ADD", "Lives in Lisbon")]
    inserted = [w for w in fake.writes if isinstance(w, Insert)]
    assert [r.memory for r in inserted[0].records] == ["Likes tea", "Lives in Lisbon"]


def test_a_fact_already_held_is_none_without_asking() -> None:
    fake = Fake({"facts": ["Likes tea"]}, held=("Likes tea",))
    result = drive(add_flow(request("I like tea")), fake)
    assert fake.prompts == ["extraction"]
    assert [(e.event, e.id) for e in result.results] == [("NONE", "m0")]
    assert fake.writes == []


def test_the_decision_sees_labels_and_an_update_keeps_the_id() -> None:
    decision = {"memory": [{"event": "UPDATE", "id": "0", "text": "Lives in Berlin",
                            "old_memory": "Lives in Lisbon"}]}
    fake = Fake({"facts": ["Lives in Berlin"]}, decision, held=("Lives in Lisbon",))
    result = drive(add_flow(request("I moved to Berlin")), fake)
    assert fake.prompts == ["extraction", "decision"]
    assert [(e.event, e.id, e.memory) for e in result.results] == [("UPDATE", "m0", "Lives in Berlin")]
    updated = next(w for w in fake.writes if isinstance(w, Update)).records
    assert [(r.id, r.memory) for r in updated] == [("m0", "Lives in Berlin")]


def test_a_malformed_answer_is_repaired_once() -> None:
    fake = Fake("not json", {"facts": ["Likes tea"]})
    result = drive(add_flow(request("I like tea")), fake)
    assert fake.prompts == ["extraction", "repair"]
    assert [e.memory for e in result.results] == ["Likes tea"]


def test_a_failed_llm_call_raises_or_is_reported_when_degrading() -> None:
    with pytest.raises(LLMError):
        drive(add_flow(request("I like tea")), Fake(LLMError("down")))
    result = drive(add_flow(request("I like tea", on_error="degrade")), Fake(LLMError("down")))
    assert result.results == []
    assert [e.stage for e in result.errors] == ["extraction"]


def test_a_dry_run_writes_nothing() -> None:
    fake = Fake({"facts": ["Likes tea"]})
    result = drive(add_flow(request("I like tea", dry_run=True)), fake)
    assert [e.event for e in result.results] == ["ADD"]
    assert fake.writes == []
