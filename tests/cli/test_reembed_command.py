"""``memkit reembed``: a progress line, the switch, and one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_commands import _env, memkit, memkit_json

pytestmark = pytest.mark.slow  # every command runs as a subprocess


def test_reembed_switches_the_store_and_prints_the_embedder_to_configure(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    for text in ("I like green tea", "I play chess", "I live in Porto"):
        memkit(db, "add", text, "-u", "alice", "--no-infer")

    done = memkit(db, "reembed", "--model", "hash-v2", "--provider", "hash",
                  "--dimensions", "32", "--batch-size", "2")
    assert "re-embedded 2/3 memories" in done.stderr and "re-embedded 3/3" in done.stderr
    assert "3 memories re-embedded" in done.stdout
    assert "hash-bow-256 (256) -> hash-v2 (32)" in done.stdout

    stale = memkit(db, "search", "tea", "-u", "alice", check=False)  # the old model
    assert stale.returncode == 1 and "hash-v2" in stale.stderr
    config = tmp_path / "memkit.json"
    section = json.loads(done.stdout.split('"embedder": ', 1)[1])
    config.write_text(json.dumps({"embedder": section}))
    hits = memkit_json(db, "--config", str(config), "search", "green tea", "-u", "alice")
    assert hits["results"][0]["memory"] == "I like green tea"

    again = memkit_json(db, "--config", str(config), "reembed", "--model", "hash-v3",
                        "--provider", "hash")
    assert (again["memories"], again["old_model"], again["new_dimension"]) == (3, "hash-v2", 256)
    assert again["embedder"]["config"]["model_name"] == "hash-v3"


def test_reembed_rejects_bad_input_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    memkit(db, "add", "I like green tea", "-u", "alice", "--no-infer")
    for args, message in (
        (["--model", "not-minilm", "--provider", "local"], "the local embedder has one model"),
        (["--model", " "], "--model needs a model name"),
        (["--model", "x", "--provider", "nope"], "unknown embedder provider 'nope'"),
        (["--model", "e5-large", "--provider", "e5"], "the e5 embedder has one model"),
    ):
        bad = memkit(db, "reembed", *args, check=False)
        assert bad.returncode == 1
        assert bad.stderr.startswith("error: ") and message in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1
    assert memkit_json(db, "search", "tea", "-u", "alice")["results"]  # nothing changed


def test_reembed_to_the_e5_model_by_its_name(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    for text in ("I like green tea", "I play chess", "I live in Porto"):
        memkit(db, "add", text, "-u", "alice", "--no-infer")
    done = memkit_json(db, "reembed", "--model", "multilingual-e5-small-q4")
    assert (done["new_model"], done["new_dimension"]) == ("multilingual-e5-small-q4", 384)
    assert done["embedder"] == {"provider": "e5", "config": {}}
    config = tmp_path / "memkit.json"
    config.write_text(json.dumps({"embedder": done["embedder"],
                                  "vector_store": {"provider": "sqlite", "config": {"path": str(db)}}}))
    search = subprocess.run(  # without the helper's --embedder hash
        [sys.executable, "-m", "memkit.cli", "--config", str(config), "search", "Which city is home?",
         "-u", "alice", "--json"], capture_output=True, text=True, env=_env(), timeout=120)
    assert search.returncode == 0, search.stderr
    assert json.loads(search.stdout)["results"][0]["memory"] == "I live in Porto"
