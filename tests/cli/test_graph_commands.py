"""``memkit graph show`` and ``memkit graph export``, as subprocesses on a sqlite file."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from memkit import Memory
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests.cli.test_commands import ROOT, _env

pytestmark = pytest.mark.slow  # every command runs as a subprocess


def graph_cli(db: Path, *args: str, command: tuple[str, ...] = ("graph",)
              ) -> subprocess.CompletedProcess[str]:
    env = _env()
    env["MEMKIT_CONFIG"] = json.dumps({
        "vector_store": {"provider": "sqlite", "config": {"path": str(db)}},
        "embedder": {"provider": "hash"}, "graph_store": {"provider": "sqlite"}})
    done = subprocess.run([sys.executable, "-m", "memkit.cli", *command, *args],
                          capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done


def test_graph_show_and_export(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = SQLiteStore(str(db))
    with Memory({"graph_store": "sqlite"}, llm=ScriptedLLM(), embedder=HashEmbedder(),
                vector_store=store) as m:
        m.add_relation("Alice", "works at", "Acme & Co", source_type="person", user_id="u")
        m.add_relation("Acme & Co", "based in", "Berlin", user_id="u")
        m.add_relation("Mallory", "knows", "Alice", user_id="other")

    tree = graph_cli(db, "show", "alice", "--depth", "2", "-u", "u").stdout
    assert "Alice" in tree and "WORKS_AT" in tree and "Berlin" in tree and "Mallory" not in tree

    shown = json.loads(graph_cli(db, "show", "Alice", "--depth", "1", "-u", "u", "--json").stdout)
    assert sorted(e["name"] for e in shown["entities"]) == ["Acme & Co", "Alice"]

    exported = json.loads(graph_cli(db, "export", "-u", "u").stdout)
    assert sorted((r["source"], r["relation"], r["target"]) for r in exported["relations"]) == [
        ("Acme & Co", "BASED_IN", "Berlin"), ("Alice", "WORKS_AT", "Acme & Co")]

    root = ET.fromstring(graph_cli(db, "export", "-u", "u", "--format", "graphml").stdout)
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    names = sorted(d.text or "" for d in root.iterfind(".//g:node/g:data[@key='name']", ns))
    assert names == ["Acme & Co", "Alice", "Berlin"]
    assert len(root.findall(".//g:edge", ns)) == 2


def test_add_names_entities_and_list_and_search_narrow_to_one(tmp_path: Path) -> None:
    db = tmp_path / "m.db"

    def memkit(*args: str) -> str:
        return graph_cli(db, *args, command=()).stdout

    memkit("add", "--no-infer", "-u", "u", "--entity", "Alice", "-e", "Acme", "Lunch at Acme")
    memkit("add", "--no-infer", "-u", "u", "-e", "alice", "Alice likes tea")
    listed = json.loads(memkit("list", "-u", "u", "--entity", "Acme", "--json"))
    assert [m["memory"] for m in listed["results"]] == ["Lunch at Acme"]
    older = json.loads(memkit("list", "-u", "u", "--entity", "Alice", "--offset", "1", "--json"))
    assert [m["memory"] for m in older["results"]] == ["Lunch at Acme"]
    found = json.loads(memkit("search", "tea", "-u", "u", "--entity", "Acme", "--json"))
    assert [m["memory"] for m in found["results"]] == ["Lunch at Acme"]
