"""Indexing notes is idempotent on every store: a re-index changes nothing, an edit
replaces exactly the changed section (issue 15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.pipeline.conftest import MakeMemory

pytestmark = pytest.mark.every_store


def test_index_is_idempotent_and_edits_leave_no_duplicates(make_memory: MakeMemory,
                                                           tmp_path: Path) -> None:
    (tmp_path / "ops.md").write_text("# Deploy\nRun make deploy.\n\n## Rollback\nUse git revert.\n")
    m = make_memory()
    assert m.index_folder(tmp_path, user_id="u").added == 2
    again = m.index_folder(tmp_path, user_id="u")
    assert (again.added, again.removed, again.unchanged) == (0, 0, 2)
    (tmp_path / "ops.md").write_text("# Deploy\nRun make ship.\n\n## Rollback\nUse git revert.\n")
    edited = m.index_folder(tmp_path, user_id="u")
    assert (edited.added, edited.removed, edited.unchanged) == (1, 1, 1)
    texts = sorted(r.memory for r in m.get_all(user_id="u"))
    assert texts == ["# Deploy\nRun make ship.", "## Rollback\nUse git revert."]
    hits = m.search("deploy make", user_id="u", filters={"source": "notes"}).results
    assert sorted(h.metadata["line_start"] for h in hits) == [1, 4]
