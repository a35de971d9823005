"""``import_mem0`` and ``memkit import --from-mem0`` on stores written by real mem0 1.0.11.

mem0 runs in a virtualenv of its own, made by this module from PyPI and kept under
the temp folder between runs (``MEMKIT_TEST_CACHE`` moves it). Its embedder is
mem0's OpenAI embedder pointed at a stub server in this process, so nothing leaves
the machine. What mem0 reports of its store through its own API (``get``,
``history``) is what memkit must hold after the import.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from memkit import Memory, import_mem0
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM
from tests._venvs import python_for_tests
from tests.cli.test_commands import memkit
from tests.conftest import unique_name
from tests.mem0.environment import MEM0, build

pytestmark = pytest.mark.slow

DIMENSIONS = 8


@pytest.fixture(scope="module")
def mem0_python() -> Path:
    """The python of a virtualenv with mem0 (and psycopg for its pgvector store)."""
    return python_for_tests(build, MEM0)


def _share_chromadb(python: Path) -> None:
    """Lets mem0 use the chromadb of this test run (memkit's chroma extra) after its own
    packages, instead of installing a second copy (two minutes)."""
    chromadb = pytest.importorskip("chromadb")
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "zz-memkit-test-chromadb.pth").write_text(str(Path(chromadb.__file__).parents[1]) + "\n")


class _Embeddings(BaseHTTPRequestHandler):
    """OpenAI's ``POST /embeddings``: a vector of each input's hash."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i,
                 "embedding": [b / 255 for b in hashlib.sha256(str(text).encode()).digest()[:DIMENSIONS]]}
                for i, text in enumerate(inputs)]
        answer = json.dumps({"object": "list", "data": data, "model": body.get("model", "stub"),
                             "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def embeddings_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def _mem0_config(url: str, home: Path, store: dict[str, Any]) -> dict[str, Any]:
    openai = {"api_key": "sk-local-stub", "openai_base_url": url}
    return {
        "llm": {"provider": "openai", "config": {**openai, "model": "gpt-4o-mini"}},
        "embedder": {"provider": "openai", "config": {**openai, "model": "stub-embedding",
                                                      "embedding_dims": DIMENSIONS}},
        "vector_store": store,
        "history_db_path": str(home / "history.db"),
        "version": "v1.1",
    }


def _write(python: Path, config: dict[str, Any], home: Path) -> dict[str, Any]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "MEM0_DIR": str(home / ".mem0"),
           "MEM0_TELEMETRY": "False", "OPENAI_API_KEY": "sk-local-stub"}
    done = subprocess.run([str(python), str(Path(__file__).with_name("write_store.py")),
                           json.dumps({"config": config})], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _memkit(tmp_path: Path) -> Memory:
    store = SQLiteStore(str(tmp_path / "memkit.db"))
    return Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store,
                  history=store.history())


def _check(m: Memory, written: dict[str, Any]) -> None:
    """memkit holds what mem0 reported: texts, scopes, metadata, times, history."""
    for expected in written["memories"]:
        item = m.get(expected["id"])
        assert item is not None
        assert item.memory == expected["memory"]
        assert (item.user_id, item.agent_id, item.run_id) == tuple(
            expected.get(k) for k in ("user_id", "agent_id", "run_id"))
        # mem0's actor_id and role (memkit keeps them on history rows) stay in the metadata
        assert item.metadata == {**(expected.get("metadata") or {}),
                                 **{k: expected[k] for k in ("actor_id", "role") if k in expected}}
        assert item.created_at.isoformat() == expected["created_at"]
        assert item.updated_at.isoformat() == expected["updated_at"]
        history = [(h.event, h.old_value, h.new_value) for h in m.history(expected["id"])]
        assert history == [(h["event"], h["old_memory"], h["new_memory"])
                           for h in written["history"][expected["id"]]]
    assert m.get(written["deleted"]) is None  # deleted in mem0: nothing to import
    # re-embedded with memkit's embedder: searches find the imported memories
    assert m.search("rye bread", user_id="alice", limit=1).results[0].memory == "Likes rye bread"


@pytest.mark.parametrize("provider", ["qdrant", "chroma"])
def test_a_mem0_store_imports_once_with_its_history(
    mem0_python: Path, embeddings_url: str, tmp_path: Path, provider: str,
) -> None:
    if provider == "chroma":
        _share_chromadb(mem0_python)
    options = {"qdrant": {"path": str(tmp_path / "qdrant"), "on_disk": True},
               "chroma": {"path": str(tmp_path / "chroma")}}[provider]
    store = {"provider": provider, "config": {"collection_name": "mem0", **options,
                                              **({"embedding_model_dims": DIMENSIONS}
                                                 if provider == "qdrant" else {})}}
    config = _mem0_config(embeddings_url, tmp_path, store)
    written = _write(mem0_python, config, tmp_path)
    home = written["memories"][2]
    assert home["memory"] == "Lives in Lisbon"
    with _memkit(tmp_path) as m:
        dry = import_mem0(m, config, dry_run=True)
        assert (dry.found, dry.imported, dry.skipped, dry.history, dry.dry_run) == (3, 3, 0, 4, True)
        assert m.get_all(user_id="alice").results == []  # a dry run writes nothing
        result = import_mem0(m, config)
        assert (result.found, result.imported, result.skipped, result.errors) == (3, 3, 0, [])
        assert sorted(result.imported_ids) == sorted(x["id"] for x in written["memories"])
        _check(m, written)
        assert [h.event for h in m.history(home["id"])] == ["ADD", "UPDATE"]
        again = import_mem0(m, config)
        assert (again.imported, again.skipped) == (0, 3)
        assert len(m.get_all(user_id="alice").results) == 2


def test_a_pgvector_store_of_mem0_through_the_cli(
    mem0_python: Path, embeddings_url: str, tmp_path: Path, pg_dsn: str,
) -> None:
    store = {"provider": "pgvector", "config": {"connection_string": pg_dsn,
                                                "collection_name": unique_name("mem0"),
                                                "embedding_model_dims": DIMENSIONS}}
    config = _mem0_config(embeddings_url, tmp_path, store)
    written = _write(mem0_python, config, tmp_path)
    config_file = tmp_path / "mem0.json"
    config_file.write_text(json.dumps(config))
    db = tmp_path / "memkit.db"
    dry = json.loads(memkit(db, "import", "--from-mem0", str(config_file), "--dry-run", "--json").stdout)
    assert (dry["found"], dry["imported"], dry["dry_run"]) == (3, 3, True)
    assert "imported 3, skipped 0" in memkit(db, "import", "--from-mem0", str(config_file)).stdout
    assert "imported 0, skipped 3" in memkit(db, "import", "--from-mem0", str(config_file)).stdout
    with _memkit(tmp_path) as m:
        _check(m, written)
