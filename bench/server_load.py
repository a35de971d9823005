"""Load on ``memkit serve``: C concurrent clients adding and searching over many scopes.

    python bench/server_load.py [--clients 64] [--seconds 20] [--scopes 200]
                                [--searches 0.8] [--workers 1] [--dsn postgresql://...]

Without ``--dsn`` the server runs on the embedded default (a SQLite file, the local
embedder); with it, on pgvector with the history in the same PostgreSQL, served by
``--workers`` processes. Adds are verbatim (``infer: false``: the LLM's time is the
provider's, not memkit's); every search embeds its query. Before the run the raw
embedder is timed in this process on the same cores: one query per call, the floor a
search pays. After it, every acknowledged add is read back from its scope: one that is
missing is lost.

Reports requests/s, p50 and p99 per kind, errors and lost writes, the CPU a request
costs in the server's processes (and in PostgreSQL's, every process of the cluster,
when it runs on this machine: give it a PostgreSQL of its own), and writes
bench/results/server_load-<store>-w<workers>.json. Targets (on 2 cores, the load
generator on the same cores): 0 errors and 0 lost at 64 clients; searches/s at least
half the embedder's queries/s; p99 at most 5x p50.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import REPO, machine, percentile, table, write_results

WORDS = ["coffee", "tea", "chess", "hiking", "budget", "flight", "Lisbon", "jazz", "records",
         "recipes", "garden", "piano", "train", "office", "meeting", "reminder", "sister",
         "landlord", "customer", "window", "bicycle", "novel"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sentence(rng: random.Random, n: int) -> str:
    return f"fact {n}: " + " ".join(rng.choice(WORDS) for _ in range(8))


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of process ``pid`` and its descendants, from /proc."""
    total = 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return total
    return total + sum(cpu_seconds(int(child)) for child in children)


def postgres_pid(dsn: str) -> int | None:
    """The postmaster of ``dsn`` when it runs on this machine (its CPU is read from /proc)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert backend is not None
        try:
            stat = Path(f"/proc/{backend[0]}/stat").read_text()
        except OSError:
            return None  # PostgreSQL on another machine
        return int(stat.rsplit(")", 1)[1].split()[1])


def embedder_queries_per_second(seconds: float) -> dict[str, Any]:
    """The default embedder, one query per call, in this process: per second of the clock,
    and per second of CPU (what it would do on idle cores, whatever else runs here)."""
    from memkit.embeddings.local import LocalEmbedder

    embedder = LocalEmbedder()
    rng = random.Random(1)
    embedder.embed([sentence(rng, 0)])  # loaded and warm
    done, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        embedder.embed([sentence(rng, done)])
        done += 1
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"model": embedder.model_name, "queries": done,
            "queries_per_s": round(done / elapsed, 1),
            "cpu_ms_per_query": round(cpu / done * 1000, 2)}


NAME = f"load_{os.getpid()}"  #: the pgvector collection, and its history table with _h


def drop_tables(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in (NAME, f"{NAME}_h", f"{NAME}_h_searches"):
            conn.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')
        conn.execute("DELETE FROM memkit_collections WHERE name = %s", [NAME])


def start_server(args: argparse.Namespace, folder: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    if args.dsn:
        name = NAME
        config = {"vector_store": {"provider": "pgvector",
                                   "config": {"dsn": args.dsn, "collection_name": name}},
                  "history": {"provider": "postgres",
                              "config": {"dsn": args.dsn, "table": f"{name}_h"}}}
    else:
        config = {"vector_store": {"provider": "sqlite",
                                   "config": {"path": os.path.join(folder, "memkit.db")}}}
    path = os.path.join(folder, "memkit.json")
    Path(path).write_text(json.dumps(config))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "memkit.cli", "--config", path, "serve", "--port", str(port),
         "--workers", str(args.workers)], env=env, stdout=subprocess.DEVNULL,
        stderr=open(os.path.join(folder, "server.log"), "wb"))  # noqa: SIM115 - the child's
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server did not start: see {folder}/server.log")
        time.sleep(0.2)
    return process, base


class Load:
    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = {"add": [], "search": []}
        self.errors: dict[str, int] = {}
        self.acked: list[tuple[str, str, str]] = []  # scope, id, text
        self.measuring = False


async def client(http: aiohttp.ClientSession, load: Load, args: argparse.Namespace,
                 number: int, until: float) -> None:
    rng = random.Random(number)
    n = 0
    while time.monotonic() < until:
        scope = f"user{rng.randrange(args.scopes)}"
        kind = "search" if rng.random() < args.searches else "add"
        text = sentence(rng, number * 1_000_000 + n)
        n += 1
        start = time.perf_counter()
        try:
            if kind == "add":
                sent = http.post("/v1/memories/", json={
                    "messages": [{"role": "user", "content": text}], "user_id": scope,
                    "infer": False})
            else:
                sent = http.get("/v1/memories/search/",
                                params={"query": text, "user_id": scope, "limit": 5})
            async with sent as response:
                status, body = response.status, await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            load.errors[type(exc).__name__] = load.errors.get(type(exc).__name__, 0) + 1
            continue
        elapsed = time.perf_counter() - start
        if status != 200:
            key = f"{kind} {status}"
            load.errors[key] = load.errors.get(key, 0) + 1
            continue
        if kind == "add":
            for event in json.loads(body)["results"]:
                load.acked.append((scope, event["id"], event["memory"]))
        if load.measuring:
            load.latency[kind].append(elapsed)


async def run_load(base: str, args: argparse.Namespace, server: int,
                   postgres: int | None) -> tuple[Load, float, dict[str, float]]:
    """The clients (aiohttp: the lightest client at hand, as the load generator shares the
    server's cores), for a warm-up and then the measured seconds."""
    load = Load()
    connector = aiohttp.TCPConnector(limit=args.clients)
    async with aiohttp.ClientSession(base, connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=60)) as http:
        start = time.monotonic()
        until = start + args.warmup + args.seconds
        tasks = [asyncio.create_task(client(http, load, args, i, until))
                 for i in range(args.clients)]
        await asyncio.sleep(args.warmup)
        load.measuring = True
        measured_from = time.monotonic()
        cpu = {"server": cpu_seconds(server), "clients": time.process_time()}
        if postgres is not None:
            cpu["postgres"] = cpu_seconds(postgres)
        await asyncio.gather(*tasks)
        cpu = {"server": cpu_seconds(server) - cpu["server"],
               "clients": time.process_time() - cpu["clients"],
               **({"postgres": cpu_seconds(postgres) - cpu["postgres"]} if postgres else {})}
        return load, time.monotonic() - measured_from, cpu


async def lost_writes(base: str, load: Load) -> int:
    """Acknowledged adds that their scope does not hold (read back page by page)."""
    by_scope: dict[str, dict[str, str]] = {}
    for scope, memory_id, text in load.acked:
        by_scope.setdefault(scope, {})[memory_id] = text
    lost = 0
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        for scope, wanted in by_scope.items():
            held: dict[str, str] = {}
            offset = 0
            while True:
                page = (await http.get("/v1/memories/", params={
                    "user_id": scope, "limit": 500, "offset": offset})).json()["results"]
                held.update((m["id"], m["memory"]) for m in page)
                if len(page) < 500:
                    break
                offset += 500
            lost += sum(held.get(i) != text for i, text in wanted.items())
    return lost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--scopes", type=int, default=200)
    parser.add_argument("--searches", type=float, default=0.8, help="share of searches")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--dsn", help="PostgreSQL for pgvector and the history")
    parser.add_argument("--embedder-seconds", type=float, default=5.0)
    args = parser.parse_args()

    embedder = embedder_queries_per_second(args.embedder_seconds)
    print(f"embedder: {embedder['queries_per_s']} queries/s (one query per call)")
    store = "pgvector" if args.dsn else "sqlite"
    with tempfile.TemporaryDirectory() as folder:
        process, base = start_server(args, folder)
        postgres = postgres_pid(args.dsn) if args.dsn else None
        try:
            load, elapsed, cpu = asyncio.run(run_load(base, args, process.pid, postgres))
            lost = asyncio.run(lost_writes(base, load))
        finally:
            process.terminate()
            process.wait(30)
            if args.dsn:
                drop_tables(args.dsn)
    kinds = {}
    for kind, values in load.latency.items():
        p50, p99 = percentile(values, 50) * 1000, percentile(values, 99) * 1000
        kinds[kind] = {"requests": len(values), "per_s": round(len(values) / elapsed, 1),
                       "p50_ms": round(p50, 1), "p99_ms": round(p99, 1),
                       "p99_over_p50": round(p99 / p50, 2) if values else None}
    errors = sum(load.errors.values())
    served = sum(k["requests"] for k in kinds.values())
    cpu_ms = {f"{part}_per_request": round(seconds / served * 1000, 2)
              for part, seconds in cpu.items()}
    searches = kinds["search"]["per_s"]
    targets = {
        "no_errors": errors == 0, "none_lost": lost == 0,
        "searches_at_least_half_the_embedder": searches >= embedder["queries_per_s"] / 2,
        "p99_within_5x_p50": all(k["p99_over_p50"] is not None and k["p99_over_p50"] <= 5
                                 for k in kinds.values()),
    }
    print(table(["kind", "requests", "per s", "p50 ms", "p99 ms", "p99/p50"],
                [[k, v["requests"], v["per_s"], v["p50_ms"], v["p99_ms"], v["p99_over_p50"]]
                 for k, v in kinds.items()]))
    in_postgres = (f", PostgreSQL {cpu_ms['postgres_per_request']} ms"
                   if "postgres_per_request" in cpu_ms else "")
    print(f"CPU per request: server {cpu_ms['server_per_request']} ms{in_postgres}, load generator "
          f"{cpu_ms['clients_per_request']} ms; embedder {embedder['cpu_ms_per_query']} ms a query")
    print(f"requests/s {sum(k['per_s'] for k in kinds.values()):.1f}; errors {load.errors or 0};"
          f" acknowledged adds {len(load.acked)}, lost {lost}; embedder"
          f" {embedder['queries_per_s']} queries/s; targets {targets}")
    write_results(REPO / "bench" / "results" / f"server_load-{store}-w{args.workers}.json", {
        "machine": machine(),
        "command": "python bench/server_load.py " + " ".join(sys.argv[1:]),
        "store": store, "workers": args.workers, "clients": args.clients,
        "seconds": round(elapsed, 1), "scopes": args.scopes, "search_share": args.searches,
        "requests_per_s": round(sum(k["per_s"] for k in kinds.values()), 1),
        "kinds": kinds, "errors": load.errors, "acknowledged_adds": len(load.acked),
        "lost": lost, "cpu_ms": cpu_ms, "embedder": embedder, "targets": targets,
    })


if __name__ == "__main__":
    main()
