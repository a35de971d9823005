"""What the FAISS store adds to the contract: its index file and its records file agree
across handles (another process's writes are seen), and a write that never committed
leaves the last committed version serving."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from memkit.stores.base import Record

faiss_store = pytest.importorskip("memkit.stores.faiss")


def _record(id: str, vector: list[float], user: str = "alice") -> Record:
    return Record(id=id, memory=f"fact {id}", hash=id, created_at="2025-01-01T00:00:00+00:00",
                  updated_at="2025-01-01T00:00:00+00:00", user_id=user,
                  vector=np.asarray(vector, np.float32))


def _store(path: Path) -> faiss_store.FaissStore:
    store = faiss_store.FaissStore(os.fspath(path))
    store.open(3, "test-model")
    return store


def test_two_handles_on_one_directory_see_each_others_writes(tmp_path: Path) -> None:
    first, second = _store(tmp_path), _store(tmp_path)
    first.insert([_record("a", [1, 0, 0]), _record("b", [0, 1, 0])])
    assert [h.record.id for h in second.search(np.array([0, 1, 0], np.float32), 1)] == ["b"]
    second.delete(["b"])
    second.update([_record("a", [0, 0, 1])])
    hits = first.search(np.array([0, 0, 1], np.float32), 5)
    assert [(h.record.id, round(h.score, 6)) for h in hits] == [("a", 1.0)]
    # one index file per collection remains: the superseded versions are removed
    assert [p.name for p in tmp_path.glob("*.faiss")] == ["memkit.3.faiss"]
    first.close()
    second.close()


def test_a_write_that_fails_leaves_the_committed_index_serving(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.insert([_record("a", [1, 0, 0])])
    bad = _record("b", [0, 1, 0])
    bad.metadata = {"not json": object()}
    with pytest.raises(Exception, match="not JSON"), store.transaction() as writer:
        writer.insert([_record("c", [0, 0, 1])])
        writer.insert([bad])
    assert store.count() == 1
    assert [h.record.id for h in store.search(np.array([0, 0, 1], np.float32), 5)] == ["a"]
    store.close()
    again = _store(tmp_path)
    assert [h.record.id for h in again.search(np.array([1, 0, 0], np.float32), 5)] == ["a"]
    again.close()
