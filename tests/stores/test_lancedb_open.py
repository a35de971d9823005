"""LanceDB: an open that meets another process's table creation waits for it."""
from __future__ import annotations

from typing import Any

import pytest

from memkit._errors import VectorStoreError

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
