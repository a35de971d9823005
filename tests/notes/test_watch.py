"""A watched folder on disk: creating, editing, renaming and deleting notes reaches search,
with nothing duplicated and nothing stale (issue 15, seed 002). Each check waits for its
condition (up to 10 s); nothing asserts on time."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memkit import AsyncMemory, FolderWatch, IndexResult, Memory
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM

pytest.importorskip("watchfiles")


def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not hold within 10 s")
        time.sleep(0.05)


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    store = SQLiteStore(str(tmp_path / "m.db"))
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store) as m:
        yield m


def notes(m: Memory) -> dict[str, str]:
    """``name:line`` -> text of the indexed notes valid now."""
    return {f"{Path(r.metadata['path']).name}:{r.metadata['line_start']}": r.memory
            for r in m.get_all(user_id="u", filters={"source": "notes"})}


def test_create_edit_rename_delete_reach_search(memory: Memory, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "ops.md").write_text("# Deploy\nRun make deploy.\n")
    results: list[IndexResult] = []
    with memory.watch_folder(folder, user_id="u", debounce_ms=100,
                             on_index=results.append) as watch:
        assert isinstance(watch, FolderWatch) and watch.running
        assert notes(memory) == {"ops.md:1": "# Deploy\nRun make deploy."}  # indexed on start
        assert results[0].added == 1

        (folder / "todo.md").write_text("Buy milk\n")
        eventually(lambda: "todo.md:1" in notes(memory))

        (folder / "ops.md").write_text("# Deploy\nRun make ship.\n")
        eventually(lambda: notes(memory).get("ops.md:1") == "# Deploy\nRun make ship.")
        hits = memory.search("deploy make", user_id="u").results
        assert [h.memory for h in hits if "Deploy" in h.memory] == ["# Deploy\nRun make ship."]

        (folder / "ops.md").rename(folder / "runbook.md")
        eventually(lambda: set(notes(memory)) == {"runbook.md:1", "todo.md:1"})

        sub = folder / "sub"
        sub.mkdir()
        (sub / "deep.md").write_text("# Deep\nnested note\n")
        eventually(lambda: "deep.md:1" in notes(memory))

        (folder / "todo.md").unlink()
        eventually(lambda: set(notes(memory)) == {"runbook.md:1", "deep.md:1"})
        assert [h.memory for h in memory.search("milk", user_id="u")
                if "milk" in h.memory] == []
    assert not watch.running
    assert len(memory.get_all(user_id="u").results) == 2


def test_async_memory_watches_too(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()

    async def scenario() -> list[str]:
        async with AsyncMemory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                               vector_store=SQLiteStore(str(tmp_path / "a.db"))) as m:
            watch = await m.watch_folder(folder, user_id="u", debounce_ms=100)
            try:
                (folder / "a.md").write_text("async note\n")
                for _ in range(200):
                    found = await m.get_all(user_id="u")
                    if found.results:
                        return [r.memory for r in found]
                    await asyncio.sleep(0.05)
                return []
            finally:
                await asyncio.to_thread(watch.stop)

    assert asyncio.run(scenario()) == ["async note"]


def test_a_missing_folder_fails_at_start(memory: Memory, tmp_path: Path) -> None:
    from memkit import MemkitError

    with pytest.raises(MemkitError, match="is not a folder"):
        memory.watch_folder(tmp_path / "missing", user_id="u")


def test_without_watchfiles_the_error_names_the_extra(memory: Memory, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "watchfiles", None)
    with pytest.raises(ImportError, match=r"pip install 'memkit-ai\[notes\]'"):
        memory.watch_folder(tmp_path, user_id="u")
