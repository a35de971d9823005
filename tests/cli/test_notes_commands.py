"""``memkit index``, ``memkit watch`` and ``memkit startup``, as subprocesses on a sqlite file."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from memkit import Memory
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.cli.test_commands import _env, memkit, memkit_json

pytestmark = pytest.mark.slow  # every command runs as a subprocess

OPTIONS = ["--store", "sqlite", "--embedder", "hash"]


def test_index_search_and_startup(tmp_path: Path) -> None:
    db, folder = tmp_path / "m.db", tmp_path / "notes"
    folder.mkdir()
    (folder / "ops.md").write_text("# Deploy\nRun make deploy.\n\n## Rollback\nUse git revert.\n")
    (folder / "big.md").write_text("x" * 300)
    out = memkit(db, "index", str(folder), "-u", "alice", "--max-file-bytes", "200").stdout
    assert "1 files: 2 sections added" in out and "big.md: 300 bytes, over the limit of 200" in out
    assert memkit_json(db, "index", str(folder), "-u", "alice", "--max-file-bytes", "200")[
        "unchanged"] == 2
    table = memkit(db, "search", "rollback", "-u", "alice").stdout
    assert "location" in table and "ops.md:4" in table.replace("\n", "").replace("│", "").replace(" ", "")

    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=SQLiteStore(str(db))) as m:
        m.add("Review the pull request", user_id="alice", infer=False, memory_type="task")
    briefing = memkit(db, "startup", "-u", "alice", "--budget-tokens", "200").stdout
    assert briefing.startswith("## Open tasks\n- [open] Review the pull request (task id: ")
    assert memkit_json(db, "startup", "-u", "bob")["items"] == []


def test_watch_keeps_the_index_in_sync(tmp_path: Path) -> None:
    db, folder = tmp_path / "m.db", tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("first note\n")
    cmd = [sys.executable, "-m", "memkit.cli", *OPTIONS, "--path", str(db), "watch", str(folder),
           "-u", "alice", "--debounce-ms", "100"]
    process = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        assert process.stderr is not None
        assert process.stderr.readline().startswith(f"watching {folder}")
        (folder / "b.md").write_text("second note about herons\n")
        deadline = time.monotonic() + 10
        store = SQLiteStore(str(db))
        with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store) as m:
            while {r.memory for r in m.get_all(user_id="alice")} != {"first note",
                                                                     "second note about herons"}:
                assert time.monotonic() < deadline, "the new note did not reach the index"
                time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(10)


def test_watch_without_watchfiles_says_which_extra(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['watchfiles'] = None; "
            f"sys.argv = ['memkit', '--store', 'memory', '--embedder', 'hash', 'watch', {str(tmp_path)!r}, "
            "'-u', 'alice']; from memkit.cli import main; main()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(), timeout=300)
    assert done.returncode == 1
    assert "pip install 'memkit-ai[notes]'" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
