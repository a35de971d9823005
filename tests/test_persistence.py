"""Memories and history survive close and reopen; a different embedder on reopen is refused;
several processes can share one SQLite file."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from memkit import ConfigError, Memory
from memkit.testing import HashEmbedder


def _config(path: Path) -> dict[str, object]:
    return {"vector_store": {"provider": "sqlite", "config": {"path": str(path)}},
            "embedder": {"provider": "hash"}}


def test_memories_and_history_survive_reopen(tmp_path: Path) -> None:
    with Memory.from_config(_config(tmp_path / "m.db")) as m:
        memory_id = m.add("I like tea", user_id="u", infer=False).results[0].id
        m.update(memory_id, "I like green tea")
    with Memory.from_config(_config(tmp_path / "m.db")) as m:
        item = m.get(memory_id)
        assert item is not None and item.memory == "I like green tea"
        assert m.search("green tea", user_id="u").results[0].id == memory_id
        assert [h.event for h in m.history(memory_id)] == ["ADD", "UPDATE"]


def test_external_history_db_path_survives_reopen(tmp_path: Path) -> None:
    config = {"vector_store": {"provider": "memory"}, "embedder": {"provider": "hash"},
              "history": {"db_path": str(tmp_path / "history.db")}}
    with Memory.from_config(config) as m:
        memory_id = m.add("I like tea", user_id="u", infer=False).results[0].id
    with Memory.from_config(config) as m:
        assert [h.event for h in m.history(memory_id)] == ["ADD"]


@pytest.mark.parametrize("embedder", [HashEmbedder(dimension=64), HashEmbedder(dimension=256)])
def test_reopening_with_another_embedding_space_raises_config_error(
    tmp_path: Path, embedder: HashEmbedder
) -> None:
    path = tmp_path / "m.db"
    with Memory.from_config(_config(path), embedder=HashEmbedder(dimension=128)) as m:
        m.add("I like tea", user_id="u", infer=False)
    with Memory.from_config(_config(path), embedder=embedder) as m, \
            pytest.raises(ConfigError, match="128"):
        m.search("tea", user_id="u")


def test_reopening_with_another_model_of_the_same_dimension_raises(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory.from_config(_config(path)) as m:
        m.add("I like tea", user_id="u", infer=False)
    other = HashEmbedder()
    other.model_name = "another-model"
    with Memory.from_config(_config(path), embedder=other) as m, \
            pytest.raises(ConfigError, match="another-model"):
        m.get_all(user_id="u")


def _writer(path: str, worker: int) -> None:
    with Memory.from_config(_config(Path(path))) as m:
        for i in range(25):
            m.add(f"worker {worker} fact {i}", user_id="shared", infer=False)


@pytest.mark.slow
def test_four_processes_write_one_file_without_losing_anything(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_writer, args=(str(path), w)) for w in range(4)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(120)
    assert [p.exitcode for p in processes] == [0, 0, 0, 0]
    with Memory.from_config(_config(path)) as m:
        items = m.get_all(user_id="shared", limit=1000).results
        assert len(items) == 100
        assert {i.memory for i in items} == {f"worker {w} fact {i}" for w in range(4) for i in range(25)}
        assert all([h.event for h in m.history(i.id)] == ["ADD"] for i in items)
        assert m.search("worker 3 fact 7", user_id="shared", limit=1).results[0].memory == "worker 3 fact 7"
