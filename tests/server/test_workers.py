"""``memkit serve --workers N``: one port, N processes, one memory, the same keys and
dashboard on every worker."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.server.workers import script_env, serving_workers

pytestmark = pytest.mark.slow  # servers run as subprocesses


def _sqlite_config(tmp_path: Path) -> dict[str, object]:
    return {"vector_store": {"provider": "sqlite", "config": {"path": str(tmp_path / "m.db")}},
            "embedder": {"provider": "hash"}}


def test_every_worker_serves_the_one_memory_with_the_same_keys(tmp_path: Path) -> None:
    with serving_workers(_sqlite_config(tmp_path)) as server:
        first, second = server.instances()
        alice_one, _ = server.client("alice-key", first)
        text = f"Alice likes tea {uuid.uuid4()}"
        added = alice_one.post("/v1/memories/", json={"messages": text, "infer": False})
        assert added.status_code == 200
        memory_id = added.json()["results"][0]["id"]
        alice_one.close()

        alice_two, _ = server.client("alice-key", second)
        assert alice_two.get(f"/v1/memories/{memory_id}/").json()["memory"] == text
        alice_two.close()
        bob_two, _ = server.client("bob-key", second)
        assert bob_two.get(f"/v1/memories/{memory_id}/").status_code == 403
        assert bob_two.get("/v1/memories/").json()["results"] == []
        bob_two.close()
        for worker in (first, second):
            stranger, _ = server.client("no-such-key", worker)
            assert stranger.get("/v1/memories/").status_code == 401
            page = stranger.get("/ui/")
            assert page.status_code == 200 and "content-security-policy" in page.headers
            assert stranger.get("/ui/session").json() == {"keys": True}
            stranger.close()


def test_workers_refuse_a_store_that_lives_in_one_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memkit.cli", "--store", "memory", "--embedder", "hash",
         "serve", "--workers", "2"],
        capture_output=True, text=True, env=script_env(), timeout=300)
    assert done.returncode == 2
    assert "lives in one process" in done.stderr and "--workers 1" in done.stderr
