"""``dedup_threshold``: a new memory whose vector is that similar to one its scope holds
is not added; the add reports the existing memory as NONE. Checked inside the store's
write transaction, as the exact dedup is, on every store."""

from __future__ import annotations

import pytest

from memkit import ConfigError, Memory
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.pipeline.conftest import MakeMemory, facts, ops

NEAR = {"dedup_threshold": 0.95}


@pytest.mark.every_store
def test_a_near_duplicate_is_not_added_and_the_existing_memory_is_returned(
        make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([facts("User runs fast", "user runs fast!"),
                       facts("User runs fasts"), ops({"event": "ADD", "text": "User runs fasts"})])
    m = make_memory(llm, config=NEAR)
    tea = m.add("User likes green tea", user_id="u", infer=False).results[0]
    assert tea.event == "ADD"
    again = m.add("user likes green teas!", user_id="u", infer=False).results  # same words
    assert [(e.event, e.id, e.memory) for e in again] == [("NONE", tea.id, "User likes green tea")]
    dry = m.add("User LIKES green tea.", user_id="u", infer=False, dry_run=True).results
    assert [(e.event, e.id) for e in dry] == [("NONE", tea.id)]
    chess = m.add("User plays chess on Sundays", user_id="u", infer=False).results[0]
    assert chess.event == "ADD"
    other = m.add("user likes green teas!", user_id="w", infer=False).results[0]
    assert other.event == "ADD" and other.id != tea.id  # another scope holds its own

    # inferred facts: two alike in one add leave one memory; a decided ADD of a text
    # close to it is the existing memory
    runs = m.add("I run fast, really fast", user_id="v").results
    assert [e.event for e in runs] == ["ADD", "NONE"] and runs[0].id == runs[1].id
    decided = m.add("Running: I am fast", user_id="v").results
    assert [(e.event, e.id) for e in decided] == [("NONE", runs[0].id)]

    assert sorted(i.memory for i in m.get_all(user_id="u").results) == [
        "User likes green tea", "User plays chess on Sundays"]
    assert [i.memory for i in m.get_all(user_id="v").results] == ["User runs fast"]
    assert [h.event for h in m.history(tea.id)] == ["ADD"]


def test_near_duplicates_are_kept_without_a_threshold(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add("User likes green tea", user_id="u", infer=False)
    again = m.add("user likes green teas!", user_id="u", infer=False).results[0]
    assert again.event == "ADD"
    assert len(m.get_all(user_id="u").results) == 2


@pytest.mark.parametrize("bad", [0, 1.5, "high"])
def test_the_threshold_is_a_similarity_up_to_one(bad: object) -> None:
    with pytest.raises(ConfigError, match="dedup_threshold"):
        Memory({"dedup_threshold": bad}, llm=ScriptedLLM(), embedder=HashEmbedder())
