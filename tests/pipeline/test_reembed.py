"""Re-embedding through Memory and AsyncMemory, on every store: the new vectors are built
beside the old ones, searches keep answering meanwhile, the switch takes every record
along, and the store then opens with the new model only."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from itertools import count

import pytest

from memkit import ConfigError, EmbeddingError, Memory
from memkit.embeddings.base import Matrix
from memkit.history.sqlite import SQLiteHistory
from memkit.stores.base import VectorStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.pipeline.conftest import MakeMemory, Shell
from tests.stores.conftest import FACTORIES

pytestmark = pytest.mark.every_store

OLD, NEW = HashEmbedder(), HashEmbedder(32)


class DuringMigration(HashEmbedder):
    """The new embedder; before its ``calls``-th batch it runs ``action`` (or fails)."""

    def __init__(self, action: object = None, *, fail_at: int | None = None) -> None:
        super().__init__(32)
        self.action, self.fail_at, self.calls = action, fail_at, 0

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.calls += 1
        if self.calls == self.fail_at:
            raise EmbeddingError("the embedding service went away")
        if self.calls == 1 and callable(self.action):
            self.action()
        return super().embed(texts)


def _reader(store: VectorStore, clock: Callable[[], datetime],
            tmp_path_factory: pytest.TempPathFactory) -> Memory:
    """Another client of the same store object, still on the old embedder."""
    history = getattr(store, "history", None)
    return Memory(embedder=OLD, vector_store=store, llm=ScriptedLLM(), clock=clock,
                  history=history() if callable(history) else SQLiteHistory(
                      str(tmp_path_factory.mktemp("reader") / "history.db")))


def _reopen(make_memory: MakeMemory, m: Shell, store_name: str, embedder: HashEmbedder) -> Shell:
    m.aclose() if m.is_async else m.close()
    reopen = FACTORIES[store_name].reopen
    assert reopen is not None
    return make_memory(store=reopen(m.vector_store), embedder=embedder)


def test_reembed_moves_every_record_while_searches_and_writes_go_on(
    make_memory: MakeMemory, store_name: str, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    seconds = count()
    clock = lambda: datetime(2025, 1, 1, tzinfo=UTC) + timedelta(seconds=next(seconds))  # noqa: E731
    m = make_memory(embedder=OLD, clock=clock)
    lisbon = m.add("Lives in Lisbon", user_id="alice", infer=False).results[0].id
    m.add("Drinks green tea", user_id="bob", infer=False)
    gone = m.add("Owns a red bicycle", user_id="alice", infer=False).results[0].id
    before = clock()
    m.update(lisbon, "Lives in Berlin")  # the Lisbon text becomes a past version
    m.delete(gone)
    reader = _reader(m.vector_store, clock, tmp_path_factory)
    seen: list[list[str]] = []

    def meanwhile() -> None:  # the old vectors answer; writes land in the old collection
        seen.append([h.memory for h in reader.search("Berlin", user_id="alice").results])
        reader.add("Plays the cello", user_id="bob", infer=False)

    progress: list[tuple[int, int]] = []
    result = m.reembed(DuringMigration(meanwhile), batch_size=2,
                       on_progress=lambda done, total: progress.append((done, total)))

    assert seen == [["Lives in Berlin"]]
    assert progress == [(2, 4), (4, 4)]
    assert (result.memories, result.old_model, result.old_dimension, result.new_dimension) == (
        5, OLD.model_name, 256, 32)
    assert m.embedder.dimension == 32
    assert [h.memory for h in m.search("cello", user_id="bob", limit=1).results] == [
        "Plays the cello"]
    # past versions and deleted memories have new vectors too
    assert [h.memory for h in m.search("Lisbon", user_id="alice", as_of=before).results] == [
        "Lives in Lisbon", "Owns a red bicycle"]
    assert [v.memory for v in m.versions(lisbon)] == ["Lives in Lisbon", "Lives in Berlin"]
    m.add("Speaks German", user_id="alice", infer=False)
    assert len(m.get_all(user_id="alice").results) == 2

    if FACTORIES[store_name].persistent:
        again = _reopen(make_memory, m, store_name, HashEmbedder(32))
        assert [h.memory for h in again.search("German", user_id="alice", limit=1).results] == [
            "Speaks German"]
        stale = _reopen(make_memory, again, store_name, OLD)
        with pytest.raises(ConfigError, match="hash-bow-32"):
            stale.search("German", user_id="alice")


def test_an_interrupted_reembed_leaves_the_old_vectors_serving(make_memory: MakeMemory,
                                                                store_name: str) -> None:
    m = make_memory(embedder=OLD)
    for n in range(5):
        m.add(f"Fact number {n} about tea", user_id="alice", infer=False)
    with pytest.raises(EmbeddingError):
        m.reembed(DuringMigration(fail_at=2), batch_size=2)
    assert m.embedder is OLD
    assert len(m.search("tea", user_id="alice").results) == 5
    m.add("Likes coffee", user_id="alice", infer=False)

    result = m.reembed(NEW)  # what the failed run built is dropped first
    assert result.memories == 6
    assert [h.memory for h in m.search("coffee", user_id="alice", limit=1).results] == [
        "Likes coffee"]
