"""A folder of markdown notes indexed as memories (issue 15, seed 002), through Memory and
AsyncMemory on the memory and sqlite stores (every store: test_notes_stores.py)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from memkit import MemkitError
from memkit.embeddings.base import Matrix
from memkit.testing import HashEmbedder
from tests.pipeline.conftest import MakeMemory, Shell

OPS = "# Deploy\nRun make deploy on Fridays.\n\n## Rollback\nUse git revert, then deploy.\n"


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.texts.extend(texts)
        return super().embed(texts)


def notes(m: Shell, **scope: str) -> dict[tuple[str, int], str]:
    """(file name, first line) -> text of the scope's note memories valid now."""
    found = m.get_all(**(scope or {"user_id": "u"}), filters={"source": "notes"}, limit=1000)
    return {(Path(r.metadata["path"]).name, r.metadata["line_start"]): r.memory for r in found}


def test_sections_become_memories_with_their_place(make_memory: MakeMemory,
                                                   tmp_path: Path) -> None:
    (tmp_path / "ops.md").write_text(OPS)
    m = make_memory()
    result = m.index_folder(tmp_path, user_id="u")
    assert (result.files, result.added, result.unchanged, result.skipped) == (1, 2, 0, [])
    hit = m.search("rollback with git", user_id="u", limit=1).results[0]
    assert hit.memory == "## Rollback\nUse git revert, then deploy."
    path = str((tmp_path / "ops.md").resolve())
    assert hit.metadata["path"] == path and hit.metadata["heading"] == "Deploy > Rollback"
    assert (hit.metadata["line_start"], hit.metadata["line_end"]) == (4, 5)
    assert len(hit.metadata["content_hash"]) == 64 and hit.location == f"{path}:4"
    assert [e.event for e in m.history(hit.id)] == ["ADD"]
    assert m.get_all(user_id="other").results == []


def test_reindex_skips_unchanged_reembeds_changed_and_ends_removed(
        make_memory: MakeMemory, tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    m = make_memory(embedder=embedder)
    (tmp_path / "ops.md").write_text(OPS)
    (tmp_path / "misc.md").write_text("Shopping: milk, eggs\n")
    m.index_folder(tmp_path, user_id="u")
    embedder.texts.clear()

    again = m.index_folder(tmp_path, user_id="u")
    assert (again.added, again.moved, again.removed, again.unchanged) == (0, 0, 0, 3)
    assert embedder.texts == [] and not again.changed

    (tmp_path / "ops.md").write_text("Intro.\n\n" + OPS.replace("git revert", "git revert -m1"))
    (tmp_path / "misc.md").unlink()
    changed = m.index_folder(tmp_path, user_id="u")
    assert (changed.added, changed.moved, changed.removed, changed.unchanged) == (2, 1, 2, 0)
    assert sorted(embedder.texts) == ["## Rollback\nUse git revert -m1, then deploy.", "Intro."]
    assert notes(m) == {("ops.md", 1): "Intro.",
                        ("ops.md", 3): "# Deploy\nRun make deploy on Fridays.",
                        ("ops.md", 6): "## Rollback\nUse git revert -m1, then deploy."}
    assert all("Shopping" not in h.memory for h in m.search("shopping milk eggs", user_id="u"))


def test_moved_section_keeps_its_memory(make_memory: MakeMemory, tmp_path: Path) -> None:
    m = make_memory()
    (tmp_path / "ops.md").write_text(OPS)
    m.index_folder(tmp_path, user_id="u")
    before = {r.memory: r.id for r in m.get_all(user_id="u")}
    (tmp_path / "ops.md").write_text("\n\n\n" + OPS)
    assert m.index_folder(tmp_path, user_id="u").moved == 2
    after = {r.memory: (r.id, r.metadata["line_start"]) for r in m.get_all(user_id="u")}
    assert {text: id for text, (id, _) in after.items()} == before
    assert sorted(line for _, line in after.values()) == [4, 7]


def test_the_file_wins_over_changes_made_to_its_memories(make_memory: MakeMemory,
                                                         tmp_path: Path) -> None:
    m = make_memory()
    (tmp_path / "ops.md").write_text(OPS)
    m.index_folder(tmp_path, user_id="u")
    deploy, rollback = sorted(m.get_all(user_id="u"), key=lambda r: r.metadata["line_start"])
    m.update(deploy.id, "Deploy whenever")
    m.delete(rollback.id)
    result = m.index_folder(tmp_path, user_id="u")
    assert (result.added, result.removed) == (2, 1)
    assert notes(m) == {("ops.md", 1): "# Deploy\nRun make deploy on Fridays.",
                        ("ops.md", 4): "## Rollback\nUse git revert, then deploy."}


def test_renamed_file_is_indexed_once_under_its_new_path(make_memory: MakeMemory,
                                                         tmp_path: Path) -> None:
    m = make_memory()
    (tmp_path / "ops.md").write_text(OPS)
    m.index_folder(tmp_path, user_id="u")
    (tmp_path / "ops.md").rename(tmp_path / "runbook.md")
    m.index_folder(tmp_path, user_id="u")
    assert sorted(notes(m)) == [("runbook.md", 1), ("runbook.md", 4)]
    hits = m.search("rollback git revert", user_id="u").results
    assert len([h for h in hits if "Rollback" in h.memory]) == 1


def test_size_cap_reports_and_drops_the_file(make_memory: MakeMemory, tmp_path: Path) -> None:
    m = make_memory()
    (tmp_path / "ops.md").write_text(OPS)
    m.index_folder(tmp_path, user_id="u")
    (tmp_path / "ops.md").write_text(OPS + "x" * 200)
    result = m.index_folder(tmp_path, user_id="u", max_file_bytes=200)
    assert [s.reason for s in result.skipped] == [f"{len(OPS) + 200} bytes, over the limit of 200"]
    assert result.removed == 2 and notes(m) == {}
    with pytest.raises(MemkitError, match="max_file_bytes"):
        m.index_folder(tmp_path, user_id="u", max_file_bytes=0)
    with pytest.raises(MemkitError, match="is not a folder"):
        m.index_folder(tmp_path / "nope", user_id="u")


def test_notes_stay_in_their_scope_and_folder(make_memory: MakeMemory, tmp_path: Path) -> None:
    m = make_memory()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.md").write_text("alpha note\n")
    (tmp_path / "b" / "y.md").write_text("beta note\n")
    m.index_folder(tmp_path / "a", user_id="u")
    m.index_folder(tmp_path / "b", user_id="u")
    m.index_folder(tmp_path / "a", user_id="v")
    (tmp_path / "a" / "x.md").unlink()
    m.index_folder(tmp_path / "a", user_id="u")  # ends x.md for u only; b's notes stay
    assert notes(m) == {("y.md", 1): "beta note"}
    assert notes(m, user_id="v") == {("x.md", 1): "alpha note"}


def test_concurrent_indexing_never_duplicates(make_memory: MakeMemory, tmp_path: Path) -> None:
    m = make_memory()
    for i in range(5):
        (tmp_path / f"n{i}.md").write_text(f"# Note {i}\nbody {i}\n\n## Part\nshared part {i}\n")
    if m.is_async:  # concurrent coroutines on the loop
        async def at_once() -> None:
            await asyncio.gather(*(m.memory.index_folder(tmp_path, user_id="u") for _ in range(4)))

        m.loop.run_until_complete(at_once())
    else:
        threads = [threading.Thread(target=m.index_folder, args=(tmp_path,),
                                    kwargs={"user_id": "u"}) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(m.get_all(user_id="u", limit=1000).results) == 10
    assert m.index_folder(tmp_path, user_id="u").unchanged == 10
