"""Markdown notes split by heading: what each chunk holds and the lines it spans."""

from __future__ import annotations

from pathlib import Path

from memkit._notes.markdown import MAX_CHUNK_CHARS, read_folder, split_markdown

NOTE = """\
---
title: ops
---
Team runbook.

# Deploy
Run make deploy.

```sh
# not a heading: inside a fence
make deploy
```

## Empty

### Rollback
Use git revert.
"""


def test_sections_by_heading_with_paths_and_lines() -> None:
    chunks = split_markdown(NOTE)
    assert [(c.heading, c.line_start, c.line_end) for c in chunks] == [
        ("", 1, 4), ("Deploy", 6, 12), ("Deploy > Empty > Rollback", 16, 17)]
    assert chunks[1].text.startswith("# Deploy\nRun make deploy.") and "make deploy\n```" in chunks[1].text
    assert chunks[2].text == "### Rollback\nUse git revert."


def test_content_hash_follows_the_text_only() -> None:
    first = split_markdown("# A\nsame text\n")[0]
    moved = split_markdown("intro\n\n# A\nsame text\n")[1]
    changed = split_markdown("# A\nother text\n")[0]
    assert first.content_hash == moved.content_hash != changed.content_hash
    assert moved.line_start == 3


def test_long_sections_are_cut_at_line_boundaries() -> None:
    body = "\n".join(f"line {i} " + "x" * 90 for i in range(100))
    chunks = split_markdown("# Long\n" + body)
    assert len(chunks) > 1 and all(len(c.text) <= MAX_CHUNK_CHARS for c in chunks)
    assert chunks[1].line_start == chunks[0].line_end + 1
    assert {c.heading for c in chunks} == {"Long"}


def test_folder_skips_large_hidden_and_binary_files(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\ntext\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.markdown").write_text("b text\n")
    (tmp_path / "big.md").write_text("x" * 200)
    (tmp_path / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "c.md").write_text("hidden\n")
    (tmp_path / "d.txt").write_text("not markdown\n")
    snapshot = read_folder(str(tmp_path), 100)
    assert [Path(f.path).name for f in snapshot.files] == ["a.md", "b.markdown"]
    reasons = {Path(p).name: r for p, r in snapshot.skipped}
    assert reasons == {"big.md": "200 bytes, over the limit of 100", "latin1.md": "not UTF-8 text"}
