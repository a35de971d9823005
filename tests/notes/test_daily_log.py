"""The daily log under concurrent writers: the title first, every line whole."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memkit._notes.daily_log import append_log


def test_concurrent_writers_keep_the_title_first_and_lines_whole(tmp_path: Path) -> None:
    path = str(tmp_path / "log" / "2025-03-01.md")

    def writer(n: int) -> None:
        for i in range(50):
            append_log(path, "# 2025-03-01\n\n", [f"- writer {n} line {i} " + "x" * 200 + "\n"])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = Path(path).read_text().splitlines()
    assert lines[:2] == ["# 2025-03-01", ""]
    body = lines[2:]
    assert len(body) == 400 and all(line.endswith("x" * 200) for line in body)
    assert sorted(p.name for p in (tmp_path / "log").iterdir()) == ["2025-03-01.md"]


def test_an_unwritable_log_is_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    append_log(str(blocker / "2025-03-01.md"), "# t\n", ["- line\n"])  # parent is a file
    assert "could not be written" in caplog.text
