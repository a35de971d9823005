"""``update(..., if_updated_at=)``: an update that refuses to overwrite a change made since
the caller read the memory (optimistic concurrency), on every store."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from memkit import ConflictError, InvalidArgument, Memory, NotFoundError, StaleVersionError
from memkit.embeddings.base import Matrix
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.pipeline.conftest import MakeMemory

pytestmark = pytest.mark.every_store


def ticking() -> Callable[[], datetime]:
    """A clock one second later at each reading: every change has its own updated_at."""
    times: Iterator[datetime] = (datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=s)
                                 for s in range(10**6))
    return lambda: next(times)


def test_an_update_from_the_version_read_applies(make_memory: MakeMemory) -> None:
    m = make_memory(clock=ticking())
    read = m.get(m.add("Likes tea", user_id="u", infer=False).results[0].id)
    updated = m.update(read.id, "Likes green tea", if_updated_at=read.updated_at)
    assert updated.memory == "Likes green tea" and updated.updated_at > read.updated_at
    again = m.update(read.id, metadata={"k": 1}, if_updated_at=updated.updated_at.isoformat())
    assert again.metadata["k"] == 1
    assert [h.event for h in m.history(read.id)] == ["ADD", "UPDATE"]


def test_an_update_from_an_older_version_changes_nothing(make_memory: MakeMemory) -> None:
    m = make_memory(clock=ticking())
    read = m.get(m.add("Likes tea", user_id="u", infer=False).results[0].id)
    theirs = m.update(read.id, "Likes coffee")
    for text, metadata in (("Likes green tea", None), (None, {"k": 1})):
        with pytest.raises(StaleVersionError, match="changed since") as raised:
            m.update(read.id, text, metadata=metadata, if_updated_at=read.updated_at)
        assert isinstance(raised.value, ConflictError)
    kept = m.get(read.id)
    assert (kept.memory, kept.updated_at) == ("Likes coffee", theirs.updated_at)
    assert "k" not in kept.metadata
    assert [h.event for h in m.history(read.id)] == ["ADD", "UPDATE"]
    assert [v.memory for v in m.versions(read.id)] == ["Likes tea", "Likes coffee"]


def test_without_if_updated_at_the_last_update_wins_as_before(make_memory: MakeMemory) -> None:
    m = make_memory(clock=ticking())
    memory_id = m.add("Likes tea", user_id="u", infer=False).results[0].id
    m.update(memory_id, "Likes coffee")
    assert m.update(memory_id, "Likes green tea").memory == "Likes green tea"


def test_a_deleted_memory_is_not_found_and_a_bad_version_is_refused(make_memory: MakeMemory) -> None:
    m = make_memory(clock=ticking())
    read = m.get(m.add("Likes tea", user_id="u", infer=False).results[0].id)
    with pytest.raises(InvalidArgument, match="invalid timestamp"):
        m.update(read.id, "Likes green tea", if_updated_at="yesterday")
    m.delete(read.id)
    with pytest.raises(NotFoundError):
        m.update(read.id, "Likes green tea", if_updated_at=read.updated_at)


class _Interrupted(HashEmbedder):
    """Runs ``meanwhile`` once, when asked to embed ``text``: after the update read the
    memory and checked its version, before its write."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.meanwhile = text, lambda: None

    def embed(self, texts: Sequence[str]) -> Matrix:
        if self.text in texts:
            meanwhile, self.meanwhile = self.meanwhile, lambda: None
            meanwhile()
        return super().embed(texts)


def test_a_change_committed_between_the_check_and_the_write_is_kept(
        make_memory: MakeMemory) -> None:
    clock = ticking()
    embedder = _Interrupted("Likes green tea")
    m = make_memory(embedder=embedder, clock=clock)
    read = m.get(m.add("Likes tea", user_id="u", infer=False).results[0].id)
    # another writer on the same store and history (not closed here: it would close them)
    other = Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=m.vector_store,
                   history=m.history_store, clock=clock)

    def theirs() -> None:
        other.update(read.id, "Likes coffee")

    embedder.meanwhile = theirs
    with pytest.raises(StaleVersionError):
        m.update(read.id, "Likes green tea", if_updated_at=read.updated_at)
    assert m.get(read.id).memory == "Likes coffee"
    assert [(h.event, h.new_value) for h in m.history(read.id)] == [
        ("ADD", "Likes tea"), ("UPDATE", "Likes coffee")]


def test_a_change_stamped_by_a_clock_that_has_not_moved_is_still_a_new_version(
        make_memory: MakeMemory) -> None:
    # another process's clock behind this one's, or a stopped clock: each change is still
    # stamped after the one before it, so the version read before it is refused
    llm = ScriptedLLM([{"facts": ["Buy soy milk"]},
                       {"memory": [{"event": "UPDATE", "id": "0", "text": "Buy soy milk"}]}])
    m = make_memory(llm, clock=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    read = m.get(m.add("Buy milk", user_id="u", infer=False, memory_type="task").results[0].id)
    changes = [lambda: m.update(read.id, metadata={"k": 1}),
               lambda: m.update_task(read.id, status="done"),
               lambda: m.update(read.id, "Buy oat milk"),
               lambda: m.add("Make it soy milk", user_id="u")]  # the LLM's UPDATE
    seen = [read.updated_at]
    for change in changes:
        change()
        seen.append(m.get(read.id).updated_at)
        with pytest.raises(StaleVersionError):
            m.update(read.id, "Buy bread", if_updated_at=seen[-2])
    assert seen == sorted(set(seen))  # each change strictly later than the one before
    assert m.update(read.id, "Buy bread", if_updated_at=seen[-1]).memory == "Buy bread"
