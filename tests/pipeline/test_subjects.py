"""Seed 004: ``subject`` on extracted facts (who or what each is about), stored as the
``subject`` metadata key and filterable on every store; and confirmation counts: a fact
that re-states a known memory (a NONE decision) adds one to its
``metadata["confirmations"]``, which ``stats()`` sums."""

from __future__ import annotations

from typing import Any

import pytest

from memkit.testing import ScriptedLLM
from tests.pipeline.conftest import MakeMemory, ops


def fact(text: str, subject: Any, kind: str = "fact") -> dict[str, Any]:
    return {"text": text, "type": kind, "importance": 0.5, "subject": subject}


@pytest.mark.every_store
def test_subjects_are_stored_and_filterable_and_restated_facts_are_confirmed(
        make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([
        {"facts": [fact("User likes tea", "user", "preference"),
                   fact("Ana lives in Lyon", "Ana")]},
        {"facts": [fact("User likes tea", "user"), fact("User loves tea a lot", "user")]},
        ops({"event": "NONE", "id": "0"}),
        {"facts": [fact("User likes tea", "user")]},
        {"facts": [fact("User likes tea", "user")]},
    ])
    m = make_memory(llm)
    first = m.add("I like tea. My sister Ana lives in Lyon.", user_id="u").results
    tea, ana = (e.id for e in first)
    about_ana = m.get_all(user_id="u", filters={"subject": "Ana"}).results
    assert [(i.id, i.metadata["subject"]) for i in about_ana] == [(ana, "Ana")]
    found = m.search("where does she live", user_id="u", filters={"subject": {"ne": "Ana"}})
    assert [i.id for i in found.results] == [tea]

    again = m.add("I like tea, I love tea a lot", user_id="u").results
    assert [(e.event, e.id) for e in again] == [("NONE", tea), ("NONE", tea)]
    m.add("Did I say I like tea?", user_id="u")
    m.add("Tea, again", user_id="u", dry_run=True)  # a dry run changes nothing
    item = m.get(tea, reinforce=False)
    assert item is not None and item.metadata == {"subject": "user", "confirmations": 2}
    assert item.memory == "User likes tea" and item.updated_at == item.created_at
    assert [h.event for h in m.history(tea)] == ["ADD"]
    assert m.get_all(user_id="u", filters={"confirmations": {"gte": 2}}).results[0].id == tea
    stats = m.stats(user_id="u")
    assert stats.confirmations == 2 and stats.memories == 2


def test_callers_subject_wins_and_a_bad_one_is_reported(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([
        {"facts": [fact("Team ships on Fridays", "user")]},
        {"facts": [fact("User plays go", "a\nb"), fact("User reads", 7)]},
    ])
    m = make_memory(llm)
    [shipped] = m.add("We ship on Fridays", user_id="u", metadata={"subject": "team"}).results
    assert m.get(shipped.id).metadata == {"subject": "team"}  # type: ignore[union-attr]
    result = m.add("I play go and read", user_id="v")  # nothing to compare: no decision
    assert sorted(e.memory for e in result.results) == ["User plays go", "User reads"]
    assert len(result.errors) == 2 and all("subject" in e.message for e in result.errors)
    assert all("subject" not in m.get(e.id).metadata for e in result.results)  # type: ignore[union-attr]


def test_infer_false_duplicates_are_not_confirmations(make_memory: MakeMemory) -> None:
    m = make_memory()
    kept = m.add("User likes tea", user_id="u", infer=False).results[0]
    assert m.add("User likes tea", user_id="u", infer=False).results[0].event == "NONE"
    assert "confirmations" not in m.get(kept.id).metadata  # type: ignore[union-attr]
