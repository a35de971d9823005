"""LanceDB: an open that meets another process's table creation waits for it."""
from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from memkit._errors import VectorStoreError
from memkit.stores.base import Record

pytest.importorskip("lancedb")

from memkit.stores import lancedb as module


class Clock:
    """``time`` for the store: sleeping moves the clock instead of waiting."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def store(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[module.LanceDBStore, Clock]:
    clock = Clock()
    monkeypatch.setattr(module, "time", clock)
    return module.LanceDBStore(str(tmp_path / "lance"), collection_name="memkit"), clock


def failing(times: int, message: str, real: Any) -> Any:
    calls = {"n": 0}

    def open_or_create(dimension: int, model: str) -> None:
        calls["n"] += 1
        if calls["n"] <= times:
            raise VectorStoreError(message)
        real(dimension, model)
    return open_or_create


def test_an_open_waits_seconds_for_a_creation_in_another_process(store: Any) -> None:
    lance, clock = store
    # what another process creating the table makes an open see, for 10 s of a loaded machine
    lance._open_or_create = failing(14, "lancedb: Table 'memkit' already exists",
                                    lance._open_or_create)
    lance.open(4, "m")
    assert clock.now > 10  # it waited, well past the old 3 s of tries
    assert lance._table is not None


def test_an_open_gives_up_after_the_wait_with_the_engines_error(store: Any) -> None:
    lance, clock = store
    lance._open_or_create = failing(10_000, "lancedb: Table 'memkit' was not found",
                                    lance._open_or_create)
    with pytest.raises(VectorStoreError, match="was not found"):
        lance.open(4, "m")
    assert lance.CREATE_WAIT - 1.0 <= clock.now <= lance.CREATE_WAIT


def test_an_open_raises_other_errors_at_once(store: Any) -> None:
    lance, clock = store
    lance._open_or_create = failing(1, "lancedb: disk full", lance._open_or_create)
    with pytest.raises(VectorStoreError, match="disk full"):
        lance.open(4, "m")
    assert clock.now == 0


def test_a_second_opener_waits_while_the_first_creates_the_table(tmp_path: Any) -> None:
    """Two creations of one table both commit in Lance (the later overwrites the earlier,
    and their keyword indexes conflict): seen as errors and lost rows with 4 processes.
    In a folder, an opener looks for the table only once no other is creating it."""
    path = str(tmp_path / "lance")
    first, second = (module.LanceDBStore(path, collection_name="memkit") for _ in range(2))
    looked, threads = threading.Event(), []
    real_names, real_create = second._db.table_names, first._db.create_table

    def names(*args: Any, **kwargs: Any) -> Any:
        looked.set()
        return real_names(*args, **kwargs)

    def create(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.Thread(target=second.open, args=(4, "m")))
        threads[0].start()
        # without the lock the second opener looks at once; with it, never while we create
        looked_meanwhile.append(looked.wait(timeout=1.0))
        return real_create(*args, **kwargs)

    looked_meanwhile: list[bool] = []
    second._db.table_names, first._db.create_table = names, create
    first.open(4, "m")
    threads[0].join()
    assert looked_meanwhile == [False]
    record = Record(id="a", memory="a fact", hash="h", created_at="2024-01-01T00:00:00+00:00",
                    updated_at="2024-01-01T00:00:00+00:00", user_id="u",
                    vector=np.ones(4, dtype=np.float32))
    first.insert([record])
    assert second.get("a") is not None  # one table, seen by both
