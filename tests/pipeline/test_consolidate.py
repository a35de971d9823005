"""Consolidation through Memory and AsyncMemory, on every store (seed 000 §10.5):
near-duplicate clusters per scope merged into their most confident member, the others
kept as versions, dry runs, automatic runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memkit import MemkitError
from tests.pipeline.conftest import MakeMemory


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 3, 1, 12, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def test_seed000_10_5_dry_run_reports_clusters_and_changes_nothing(make_memory: MakeMemory) -> None:
    m = make_memory()
    texts = ["User likes green tea", "user likes green tea!", "User likes GREEN tea.",
             "User owns a red bicycle"]
    ids = [m.add(t, user_id="u", infer=False).results[0].id for t in texts]
    report = m.consolidate(user_id="u")
    assert report.dry_run and report.examined == 4 and report.merged == 2
    (cluster,) = report.clusters
    assert {cluster.keeper.id, *(i.id for i in cluster.merged)} == set(ids[:3])
    assert len(m.get_all(user_id="u").results) == 4
    assert all(len(m.versions(i)) == 1 for i in ids)


def test_seed000_10_5_merges_into_the_most_confident_member(make_memory: MakeMemory) -> None:
    clock = Clock()
    m = make_memory(config={"lifecycle": {"decay": True, "reinforce": False}}, clock=clock)
    old = m.add("User likes green tea", user_id="u", infer=False, importance=0.9,
                metadata={"tags": ["drinks"], "source": "chat"}).results[0]
    clock.now += timedelta(days=40)
    new = m.add("User likes green tea!", user_id="u", infer=False, importance=0.2,
                metadata={"tags": ["tea", "drinks"], "mood": "calm"}).results[0]
    report = m.consolidate(user_id="u", dry_run=False)
    assert not report.dry_run and report.clusters[0].keeper.id == new.id
    (kept,) = m.get_all(user_id="u").results
    assert kept.id == new.id and kept.importance == 0.9
    assert kept.metadata == {"tags": ["tea", "drinks"], "mood": "calm", "source": "chat",
                             "role": "user"}
    assert m.get(old.id) is None


@pytest.mark.every_store
def test_seed000_10_5_merged_memories_stay_reachable_as_versions(make_memory: MakeMemory) -> None:
    m = make_memory()
    first = m.add("User lives in Oslo", user_id="u", infer=False).results[0]
    m.update(first.id, "User lives in Bergen")  # a chain of its own: Oslo -> Bergen
    twin = m.add("user lives in bergen", user_id="u", infer=False).results[0]
    third = m.add("User lives in Bergen.", user_id="u", infer=False).results[0]
    report = m.consolidate(user_id="u", dry_run=False)
    keeper = report.clusters[0].keeper.id
    assert len(m.get_all(user_id="u").results) == 1
    for any_id in (first.id, twin.id, third.id):
        chain = m.versions(any_id)
        assert {v.memory for v in chain} == {"User lives in Oslo", "User lives in Bergen",
                                             "user lives in bergen", "User lives in Bergen."}
        assert [v.id for v in chain if v.valid_to is None] == [keeper]
    merged = [i.id for i in report.clusters[0].merged]
    for memory_id in merged:
        assert m.history(memory_id)[-1].event == "DELETE"
    assert m.consolidate(user_id="u").clusters == []  # nothing left to merge


def test_seed000_10_5_scopes_are_consolidated_apart(make_memory: MakeMemory) -> None:
    m = make_memory()
    for user in ("a", "b"):
        m.add("User likes green tea", user_id=user, infer=False)
        m.add("User likes green tea!", user_id=user, infer=False)
    report = m.consolidate(dry_run=False)  # every scope of the store
    assert len(report.clusters) == 2
    for cluster in report.clusters:
        assert {cluster.keeper.user_id, *(i.user_id for i in cluster.merged)} in ({"a"}, {"b"})
    assert len(m.get_all(user_id="a").results) == len(m.get_all(user_id="b").results) == 1


def test_seed000_10_5_similar_vectors_with_different_words_are_not_merged(
        make_memory: MakeMemory) -> None:
    m = make_memory()
    m.add("User likes tea", user_id="u", infer=False)
    m.add("User hates strong black coffee", user_id="u", infer=False)
    assert m.consolidate(user_id="u", threshold=0.01).clusters == []
    with pytest.raises(MemkitError):
        m.consolidate(user_id="u", threshold=1.5)


def test_consolidation_runs_every_n_adds_when_configured(make_memory: MakeMemory) -> None:
    m = make_memory(config={"lifecycle": {"consolidate_every": 3}})
    m.add("User likes green tea", user_id="u", infer=False)
    m.add("User likes green tea!", user_id="u", infer=False)
    assert len(m.get_all(user_id="u").results) == 2
    m.add("User owns a red bicycle", user_id="u", infer=False)  # the third add: a run
    assert sorted(r.memory for r in m.get_all(user_id="u").results) == [
        "User likes green tea", "User owns a red bicycle"]
