"""Memory over time through Memory and AsyncMemory, on every store: validity, the version
chain (seed 004's supersession cases), as-of reads, expiry, dry runs, hard deletes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memkit import ConflictError, NotFoundError
from memkit.testing import ScriptedLLM
from tests.pipeline.conftest import MakeMemory, facts, ops

pytestmark = pytest.mark.every_store


def t(month: int, day: int = 1, year: int = 2025) -> datetime:
    return datetime(year, month, day, 12, tzinfo=UTC)


# -- seed 004: supersession ------------------------------------------------------------


def test_refuses_a_second_supersede(make_memory: MakeMemory) -> None:
    m = make_memory()
    old = m.add("Project deadline is May 1", user_id="u", infer=False).results[0]
    new = m.supersede(old.id, "Project deadline is June 1")
    assert new.id != old.id and new.supersedes == old.id
    with pytest.raises(ConflictError):
        m.supersede(old.id, "Project deadline is July 1")
    assert [v.memory for v in m.versions(old.id)] == [
        "Project deadline is May 1", "Project deadline is June 1",
    ]
    third = m.supersede(new.id, "Project deadline is July 1")  # the current one can be
    assert third.supersedes == new.id


def test_chain_is_walkable_both_ways(make_memory: MakeMemory) -> None:
    m = make_memory()
    first = m.add("Team size is 3", user_id="u", infer=False).results[0]
    second = m.supersede(first.id, "Team size is 5")
    third = m.supersede(second.id, "Team size is 8")
    texts = ["Team size is 3", "Team size is 5", "Team size is 8"]
    for start in (first.id, second.id, third.id):
        chain = m.versions(start)
        assert [v.memory for v in chain] == texts
        assert [v.id for v in chain] == [first.id, second.id, third.id]
    chain = m.versions(third.id)
    assert [v.supersedes for v in chain] == [None, first.id, second.id]
    assert chain[0].valid_to == chain[1].valid_from and chain[1].valid_to == chain[2].valid_from
    assert chain[2].valid_to is None


def test_reads_are_active_only_by_default(make_memory: MakeMemory) -> None:
    m = make_memory()
    old = m.add("Office is in Berlin", user_id="u", infer=False).results[0]
    new = m.supersede(old.id, "Office is in Munich")
    gone = m.add("Likes jazz", user_id="u", infer=False).results[0]
    m.delete(gone.id)
    assert [i.memory for i in m.get_all(user_id="u").results] == ["Office is in Munich"]
    assert [i.memory for i in m.search("office", user_id="u").results] == ["Office is in Munich"]
    assert m.get(old.id) is None and m.get(gone.id) is None
    current = m.get(new.id)
    assert current is not None and current.memory == "Office is in Munich"
    with pytest.raises(NotFoundError):
        m.update(old.id, "Office is in Paris")
    with pytest.raises(NotFoundError):
        m.delete(gone.id)


# -- update keeps the id, the old text becomes a past version ---------------------------


def test_update_keeps_the_id_and_the_old_text_as_a_past_version(make_memory: MakeMemory) -> None:
    m = make_memory()
    event = m.add("Likes tea", user_id="u", infer=False).results[0]
    before = datetime.now(UTC)
    m.update(event.id, "Likes coffee")
    chain = m.versions(event.id)
    assert [(v.memory, v.id == event.id) for v in chain] == [("Likes tea", False),
                                                             ("Likes coffee", True)]
    past, current = chain
    assert current.supersedes == past.id
    assert past.valid_to is not None and past.valid_to >= before
    assert current.valid_from == past.valid_to
    assert [i.memory for i in m.search("tea", user_id="u", as_of=before).results] == ["Likes tea"]
    assert [i.memory for i in m.search("tea", user_id="u").results] == ["Likes coffee"]
    assert [h.event for h in m.history(event.id)] == ["ADD", "UPDATE"]


def test_delete_ends_validity_and_hard_delete_removes_every_version(
    make_memory: MakeMemory,
) -> None:
    m = make_memory()
    event = m.add("Has a cat", user_id="u", infer=False).results[0]
    m.update(event.id, "Has two cats")
    while_valid = datetime.now(UTC)
    m.delete(event.id)
    assert m.get_all(user_id="u").results == []
    assert [i.memory for i in m.get_all(user_id="u", as_of=while_valid).results] == [
        "Has two cats"]
    assert len(m.versions(event.id)) == 2
    assert [h.event for h in m.history(event.id)] == ["ADD", "UPDATE", "DELETE"]
    m.delete(event.id, hard=True)
    assert m.versions(event.id) == []
    assert m.get_all(user_id="u", as_of=while_valid).results == []
    assert m.vector_store.count() == 0
    with pytest.raises(NotFoundError):
        m.delete(event.id, hard=True)


def test_purge_removes_every_record_of_the_scope_only(make_memory: MakeMemory) -> None:
    m = make_memory()
    kept = m.add("Bob likes tea", user_id="bob", infer=False).results[0]
    a = m.add("Alice likes tea", user_id="alice", infer=False).results[0]
    m.update(a.id, "Alice likes coffee")
    b = m.add("Alice has a dog", user_id="alice", infer=False).results[0]
    m.delete(b.id)
    assert m.purge(user_id="alice") == 3
    assert m.versions(a.id) == [] and m.versions(b.id) == []
    assert m.get_all(user_id="alice", as_of=t(1, year=2000)).results == []
    assert m.get(kept.id) is not None


def test_delete_all_ends_validity_of_current_memories(make_memory: MakeMemory) -> None:
    m = make_memory()
    first = m.add("Likes tea", user_id="u", infer=False).results[0]
    m.update(first.id, "Likes coffee")
    m.add("Likes jazz", user_id="u", infer=False)
    before = datetime.now(UTC)
    deleted = m.delete_all(user_id="u")
    assert sorted(e.old_memory or "" for e in deleted.results) == ["Likes coffee", "Likes jazz"]
    assert m.get_all(user_id="u").results == []
    assert {i.memory for i in m.get_all(user_id="u", as_of=before).results} == {
        "Likes coffee", "Likes jazz"}


# -- as of: a replayed conversation -------------------------------------------------------


def test_as_of_answers_each_period_of_a_replayed_conversation(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([
        facts("User lives in Lisbon"),
        facts("User lives in Berlin"),
        ops({"event": "UPDATE", "id": "0", "text": "User lives in Berlin"}),
        facts("User lives in Tokyo"),
        ops({"event": "UPDATE", "id": "0", "text": "User lives in Tokyo"}),
        facts("User has moved away"),
        ops({"event": "DELETE", "id": "0"}),
    ])
    m = make_memory(llm)
    added = m.add("I live in Lisbon", user_id="u", timestamp=t(1)).results[0]
    assert m.add("I moved to Berlin", user_id="u", timestamp=t(4)).results[0].id == added.id
    assert m.add("Now I live in Tokyo", user_id="u", timestamp=t(9)).results[0].id == added.id
    decision = llm.calls[-1].messages[-1]["content"]
    assert "Berlin" in decision and "Lisbon" not in decision  # only what was valid is shown
    assert m.add("I left Tokyo", user_id="u", timestamp=t(12, 15)).results[0].event == "DELETE"

    def city(when: datetime) -> list[str]:
        return [i.memory for i in m.search("where does the user live", user_id="u",
                                           as_of=when).results]

    assert city(t(1, 1, 2024)) == []
    assert city(t(2)) == ["User lives in Lisbon"]
    assert city(t(4)) == ["User lives in Berlin"]  # valid from the update's timestamp
    assert city(t(6)) == ["User lives in Berlin"]
    assert city(t(11)) == ["User lives in Tokyo"]
    assert city(t(12, 20)) == []
    assert [i.memory for i in m.get_all(user_id="u", as_of=t(5)).results] == [
        "User lives in Berlin"]
    assert m.get_all(user_id="u").results == []
    assert [v.memory for v in m.versions(added.id)] == [
        "User lives in Lisbon", "User lives in Berlin", "User lives in Tokyo"]
    periods = [(v.valid_from, v.valid_to) for v in m.versions(added.id)]
    assert periods == [(t(1), t(4)), (t(4), t(9)), (t(9), t(12, 15))]


def test_as_of_accepts_iso_strings_and_filters_combine(make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add("Likes tea", user_id="u", infer=False, timestamp=t(1), metadata={"k": 1})
    m.add("Likes jazz", user_id="u", infer=False, timestamp=t(3), metadata={"k": 2})
    got = m.get_all(user_id="u", as_of="2025-02-01T00:00:00Z").results
    assert [i.memory for i in got] == ["Likes tea"]
    got = m.get_all(user_id="u", as_of=t(5), filters={"k": 2}).results
    assert [i.memory for i in got] == ["Likes jazz"]
    got = m.get_all(user_id="u", filters={"valid_from": {"gte": t(2).isoformat()}}).results
    assert [i.memory for i in got] == ["Likes jazz"]


# -- expiry ------------------------------------------------------------------------------


def test_expired_memories_are_hidden_unless_asked_for(make_memory: MakeMemory) -> None:
    m = make_memory()
    soon = datetime.now(UTC) - timedelta(seconds=1)
    expired = m.add("Promo code ABC", user_id="u", infer=False, expires_at=soon).results[0]
    lasting = m.add("Likes tea", user_id="u", infer=False,
                    expiration_date="2999-01-01").results[0]
    assert [i.id for i in m.get_all(user_id="u").results] == [lasting.id]
    assert [i.id for i in m.search("promo", user_id="u").results] == [lasting.id]
    assert {i.id for i in m.get_all(user_id="u", include_expired=True).results} == {
        expired.id, lasting.id}
    item = m.get_all(user_id="u").results[0]
    assert item.expires_at == datetime(2999, 1, 1, tzinfo=UTC)
    assert m.get(expired.id) is None
    m.update(lasting.id, "Likes green tea", expires_at=soon)
    assert m.get_all(user_id="u").results == []
    with pytest.raises(Exception, match="not both"):
        m.add("x", user_id="u", infer=False, expires_at=soon, expiration_date=soon)


def test_an_expired_text_can_be_added_again(make_memory: MakeMemory) -> None:
    m = make_memory()
    gone = datetime.now(UTC) - timedelta(seconds=1)
    m.add("On vacation", user_id="u", infer=False, expires_at=gone)
    again = m.add("On vacation", user_id="u", infer=False).results[0]
    assert again.event == "ADD"
    assert [i.id for i in m.get_all(user_id="u").results] == [again.id]


# -- dry run ---------------------------------------------------------------------------


def test_dry_run_reports_the_decisions_and_applies_nothing(make_memory: MakeMemory) -> None:
    llm = ScriptedLLM([
        facts("User likes Python"),
        facts("User likes Rust", "User likes Python"),
        ops({"event": "UPDATE", "id": "0", "text": "User likes Rust"}),
    ])
    m = make_memory(llm)
    first = m.add("I like Python", user_id="u").results[0]
    dry = m.add("I like Rust now", user_id="u", dry_run=True)
    assert [(e.event, e.id) for e in dry.results] == [("NONE", first.id), ("UPDATE", first.id)]
    assert dry.usage.llm_calls == 2 and dry.errors == []
    assert [i.memory for i in m.get_all(user_id="u").results] == ["User likes Python"]
    assert len(m.versions(first.id)) == 1 and len(m.history(first.id)) == 1
    verbatim = m.add(["User likes Python", "Brand new"], user_id="u", infer=False, dry_run=True)
    assert [(e.event, e.memory) for e in verbatim.results] == [
        ("NONE", "User likes Python"), ("ADD", "Brand new")]
    assert len(m.get_all(user_id="u").results) == 1


# -- revert ------------------------------------------------------------------------------


def test_revert_undoes_an_update_once(make_memory: MakeMemory) -> None:
    m = make_memory()
    event = m.add("Likes tea", user_id="u", infer=False).results[0]
    m.update(event.id, "Likes coffee")
    update = m.history(event.id)[-1]
    undo = m.revert(update.id)
    assert (undo.event, undo.reverts, undo.old_value, undo.new_value) == (
        "UPDATE", update.id, "Likes coffee", "Likes tea")
    current = m.get(event.id)
    assert current is not None and current.memory == "Likes tea"
    assert [v.memory for v in m.versions(event.id)] == ["Likes tea", "Likes coffee", "Likes tea"]
    assert m.history(event.id)[-1] == undo
    with pytest.raises(ConflictError):
        m.revert(update.id)
    assert len(m.versions(event.id)) == 3


def test_revert_of_an_add_and_of_a_delete(make_memory: MakeMemory) -> None:
    m = make_memory()
    event = m.add("Has a bike", user_id="u", infer=False).results[0]
    added = m.history(event.id)[0]
    undo = m.revert(added.id)
    assert undo.event == "DELETE" and m.get(event.id) is None
    restored = m.revert(undo.id)  # an undo is an event too: undo it
    assert restored.event == "ADD" and restored.reverts == undo.id
    item = m.get(event.id)
    assert item is not None and item.memory == "Has a bike"
    assert len(m.versions(event.id)) == 2  # the deleted interval stays a past version
    with pytest.raises(ConflictError):
        m.revert(added.id)  # already reverted
    m.delete(event.id)
    m.revert(m.history(event.id)[-1].id)
    assert [i.memory for i in m.get_all(user_id="u").results] == ["Has a bike"]


def test_revert_refuses_when_the_memory_changed_since(make_memory: MakeMemory) -> None:
    m = make_memory()
    event = m.add("Likes tea", user_id="u", infer=False).results[0]
    m.update(event.id, "Likes coffee")
    m.update(event.id, "Likes cocoa")
    first_update = m.history(event.id)[1]
    with pytest.raises(ConflictError, match="later events"):
        m.revert(first_update.id)
    with pytest.raises(NotFoundError):
        m.revert("no-such-event")
    assert m.get(event.id).memory == "Likes cocoa"  # type: ignore[union-attr]


def test_concurrent_reverts_of_one_event_apply_once(make_memory: MakeMemory) -> None:
    from memkit._pipeline.effects import Transaction
    from memkit._pipeline.memories import revert_flow
    from memkit._time import to_iso

    m = make_memory()
    event = m.add("Likes tea", user_id="u", infer=False).results[0]
    m.update(event.id, "Likes coffee")
    update = m.history(event.id)[-1]
    runtime = m.memory._runtime
    flows = [revert_flow(update.id, to_iso(datetime.now(UTC))) for _ in range(2)]
    # both read the history and the memory before either writes; the second is refused
    # inside its transaction
    pending = []
    for flow in flows:
        effect = next(flow)
        while not isinstance(effect, Transaction):
            effect = flow.send(runtime._handle(effect))
        pending.append(effect)
    results: list[object] = []
    for flow, effect in zip(flows, pending, strict=True):
        try:
            flow.send(runtime._handle(effect))
        except StopIteration as stop:
            results.append(stop.value)
        except ConflictError as exc:
            results.append(exc)
    assert sum(isinstance(r, ConflictError) for r in results) == 1
    assert [v.memory for v in m.versions(event.id)] == ["Likes tea", "Likes coffee", "Likes tea"]
