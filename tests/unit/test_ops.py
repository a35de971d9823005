"""The operation protocol every backend shares (memkit.stores._ops), on fake steps."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import pytest

from memkit.stores._ops import arun, run, translated


def total(keys: list[str]) -> Generator[str, int, int]:
    """An operation: one step per key, the answers summed."""
    answers = []
    for key in keys:
        answers.append((yield key))
    return sum(answers)


def test_run_answers_each_step_and_returns_the_result() -> None:
    asked: list[str] = []

    def execute(step: str) -> int:
        asked.append(step)
        return len(step)

    assert run(total(["a", "bb", "ccc"]), execute) == 6
    assert asked == ["a", "bb", "ccc"]


def test_arun_awaits_each_step() -> None:
    async def execute(step: str) -> int:
        await asyncio.sleep(0)
        return len(step)

    assert asyncio.run(arun(total(["a", "bb"]), execute)) == 3


def test_an_operation_without_steps_returns_at_once() -> None:
    assert run(total([]), lambda step: pytest.fail("no step to execute")) == 0


def test_an_engine_error_ends_the_operation_and_runs_its_cleanup() -> None:
    cleaned: list[bool] = []

    def op() -> Generator[str, Any, None]:
        try:
            yield "boom"
            yield "never"
        finally:
            cleaned.append(True)

    def execute(step: str) -> None:
        raise RuntimeError(step)

    with pytest.raises(RuntimeError, match="boom"):
        run(op(), execute)
    assert cleaned == [True]


def test_translated_maps_steps_and_answers() -> None:
    op = translated(total(["x", "yy"]), step=str.upper, result=lambda answer: answer * 10)
    asked: list[str] = []

    def execute(step: str) -> int:
        asked.append(step)
        return len(step)

    assert run(op, execute) == 30
    assert asked == ["X", "YY"]
