"""memkit and mem0 side by side, same conversations, same LLM, same embedder (BENCHMARKS.md §3).

    python bench/vs_mem0.py                                  # about 10 minutes on 2 cores
    python bench/vs_mem0.py --adds 10 --sizes 1000 --quick   # a smoke run

mem0 is installed from PyPI into bench/.venv-mem0-<version> (created on first
use) and driven by bench/_mem0_driver.py in a subprocess. Both systems call
one stub (bench/stub_llm.py, in a process of its own) on 127.0.0.1 through
their normal OpenAI-style providers: chat completions answered deterministically from the conversation,
and all-MiniLM-L6-v2 embeddings computed by memkit's local embedder. The stub
counts every request and its prompt tokens the same way for both.

Measured: LLM calls and prompt tokens per add, wall time per add at stub
latency 0 and 300 ms (memkit in both add modes: two calls, its default, and
``add_mode="one_call"``), 32 concurrent async adds at 300 ms, and search latency
at 10k and 100k memories in each system's default store. The first
``--api-ingest`` memories go in through each public API with infer=False; the
rest are synthetic vectors written straight into the store (mem0's payload
shape for mem0), so that 100k fits in the time budget.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import numpy as np  # noqa: E402
from _common import machine, median, percentile, table, write_results  # noqa: E402
from stub_llm import StubProcess  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared/data/locomo/locomo10-dev.json"
DRIVER = REPO / "bench/_mem0_driver.py"
DIM = 384


# -- workload ---------------------------------------------------------------

def load_turns(path: Path) -> list[dict[str, Any]]:
    """Every conversation's turns, in order, as ``{sample, session, speaker, text}``."""
    from memkit._eval.locomo import load_samples, sessions

    turns = []
    for sample in load_samples(path):
        conv = sample["conversation"]
        for n in sessions(conv):
            for turn in conv[f"session_{n}"]:
                text = turn["text"] + (f" and shared {turn['blip_caption']}"
                                       if turn.get("blip_caption") else "")
                turns.append({"sample": sample["sample_id"], "session": n,
                              "speaker": turn["speaker"], "text": text})
    return turns


def windows(turns: list[dict[str, Any]], count: int, size: int, user: str) -> list[dict[str, Any]]:
    """``count`` adds of ``size`` consecutive turns; the first speaker is the user."""
    adds = []
    first = turns[0]["speaker"]
    for i in range(count):
        chunk = turns[(i * size) % len(turns):][:size]
        messages = [{"role": "user" if t["speaker"] == first else "assistant",
                     "content": t["text"], "name": t["speaker"]} for t in chunk]
        adds.append({"user_id": user, "messages": messages})
    return adds


# -- mem0 in its own venv -----------------------------------------------------

def ensure_venv(version: str) -> Path:
    venv = REPO / f"bench/.venv-mem0-{version}"
    python = venv / "bin/python"
    probe = [str(python), "-c", "import mem0"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"creating {venv.relative_to(REPO)} with mem0ai=={version} from PyPI ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"mem0ai=={version}"], check=True)
    return python


def run_mem0(python: Path, job: dict[str, Any], stub: StubProcess) -> dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix="mem0-bench-")
    job = {**job, "base_url": stub.base_url, "workdir": workdir}
    env = {**os.environ, "MEM0_TELEMETRY": "False", "MEM0_DIR": workdir,
           "OPENAI_API_KEY": "x", "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.run([str(python), str(DRIVER)], input=json.dumps(job), text=True,
                          capture_output=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"mem0 driver failed:\n{proc.stderr[-4000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


# -- memkit in this process ---------------------------------------------------

def memkit_store() -> str:
    try:
        import memkit.stores.sqlite  # noqa: F401
    except ImportError:
        return "memory"
    return "sqlite"


#: "local"; "stub": memkit fetches the same vectors over HTTP, as mem0 does; "hash": no model
#: (bench/concurrency.py, to see the pipeline without the embedding's CPU)
EMBEDDER = "local"


def memkit_config(stub: StubProcess, workdir: str, store: str,
                  add_mode: str = "two_calls") -> dict[str, Any]:
    store_config = {"path": os.path.join(workdir, "memkit.db")} if store == "sqlite" else {}
    embedder: dict[str, Any] = {"provider": EMBEDDER}
    if EMBEDDER == "stub":
        embedder = {"provider": "litellm", "config": {
            "model": "openai/all-MiniLM-L6-v2", "api_base": stub.base_url, "api_key": "x",
            "dimensions": DIM}}
    return {
        "llm": {"provider": "litellm", "config": {
            "model": "openai/stub", "api_base": stub.base_url, "api_key": "x"}},
        "embedder": embedder,
        "vector_store": {"provider": store, "config": store_config},
        "history": {"db_path": os.path.join(workdir, "history.db")},
        "add_mode": add_mode,
    }


def memkit_adds(stub: StubProcess, adds: list[dict[str, Any]], store: str,
                add_mode: str = "two_calls") -> dict[str, Any]:
    from memkit import Memory

    times, events, usage = [], [], {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    with Memory.from_config(memkit_config(stub, tempfile.mkdtemp(), store, add_mode)) as memory:
        memory.add(adds[0]["messages"], user_id="warm-up")  # imports, connections
        stub.reset()
        for add in adds:
            start = time.perf_counter()
            result = memory.add(add["messages"], user_id=add["user_id"])
            times.append(time.perf_counter() - start)
            events.append(sum(e.event != "NONE" for e in result.results))
            for key in usage:
                usage[key] += getattr(result.usage, key)
    return {"times": times, "events": events, "reported_usage": usage}


def memkit_concurrent(stub: StubProcess, job: dict[str, Any], store: str) -> dict[str, Any]:
    from memkit import AsyncMemory

    async def main() -> dict[str, Any]:
        async with AsyncMemory.from_config(memkit_config(stub, tempfile.mkdtemp(), store)) as m:
            await m.add(job["warmup"]["messages"], user_id=job["warmup"]["user_id"])
            start, cpu = time.perf_counter(), time.process_time()
            await m.add(job["single"]["messages"], user_id=job["single"]["user_id"])
            single, single_cpu = time.perf_counter() - start, time.process_time() - cpu
            start, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(m.add(a["messages"], user_id=a["user_id"]) for a in job["adds"]))
            # CPU of this process (the stub's is not in it): the embedding's share shows here
            return {"single_s": single, "concurrent_s": time.perf_counter() - start,
                    "single_cpu_s": single_cpu, "concurrent_cpu_s": time.process_time() - cpu,
                    "n": len(job["adds"])}

    return asyncio.run(main())


def memkit_search(stub: StubProcess, job: dict[str, Any], store: str) -> dict[str, Any]:
    from memkit import Memory
    from memkit._filters import Condition
    from memkit.stores.base import Record

    out: dict[str, Any] = {"sizes": {}}
    with Memory.from_config(memkit_config(stub, tempfile.mkdtemp(), store)) as memory:
        start = time.perf_counter()
        count = 0
        for user_id, texts in job["api_records"].items():
            memory.add([{"role": "user", "content": t} for t in texts], user_id=user_id,
                       infer=False)
            count += len(texts)
        out["api_ingest"] = {"count": count, "seconds": time.perf_counter() - start}
        queries = job["queries"]
        vectors = memory.embedder.embed([q["text"] for q in queries])
        rng = np.random.default_rng(job["bulk"]["seed"])
        filled, now = count, datetime.now(UTC).isoformat()
        for size in job["sizes"]:
            start = time.perf_counter()
            while filled < size:
                n = min(1000, size - filled)
                block = rng.standard_normal((n, DIM), dtype=np.float32)
                block /= np.linalg.norm(block, axis=1, keepdims=True)
                memory.vector_store.insert([
                    Record(id=str(uuid.uuid4()), memory=f"filler memory {i}",
                           hash=f"{i:032x}", created_at=now, updated_at=now,
                           user_id=f"bulk-{i // job['bulk']['per_user']}", vector=block[j])
                    for j, i in enumerate(range(filled, filled + n))
                ])
                filled += n
            bulk_s = time.perf_counter() - start
            memory.search(queries[0]["text"], user_id=queries[0]["user_id"], limit=job["limit"])
            api, direct = [], []
            for q, vector in zip(queries, vectors, strict=True):
                start = time.perf_counter()
                memory.search(q["text"], user_id=q["user_id"], limit=job["limit"])
                api.append(time.perf_counter() - start)
                scope = Condition(field="user_id", operator="eq", value=q["user_id"])
                start = time.perf_counter()
                memory.vector_store.search(vector, limit=job["limit"], filter=scope)
                direct.append(time.perf_counter() - start)
            out["sizes"][str(size)] = {"bulk_seconds": bulk_s, "search_api": api,
                                       "search_store": direct}
    return out


# -- the phases ---------------------------------------------------------------

#: memkit's two add modes, each measured as a system of its own in the adds phases
MEMKIT_MODES = {"memkit": "two_calls", "memkit one call": "one_call"}


def measure_adds(stub: StubProcess, adds: list[dict[str, Any]], latency: float,
                 mem0_pythons: dict[str, Path], store: str) -> dict[str, Any]:
    stub.latency_ms = latency
    results: dict[str, Any] = {}
    stub.reset()
    for name, add_mode in MEMKIT_MODES.items():
        results[name] = memkit_adds(stub, adds, store, add_mode)
        results[name]["stub"] = stub.reset()
    for version, python in mem0_pythons.items():
        results[f"mem0 {version}"] = run_mem0(python, {"phase": "adds", "adds": adds}, stub)
        results[f"mem0 {version}"]["stub"] = stub.reset()
    for result in results.values():
        n = len(result["times"])
        result.update(
            adds=n, llm_calls_per_add=result["stub"]["llm_calls"] / n,
            prompt_tokens_per_add=result["stub"]["prompt_tokens"] / n,
            median_add_s=median(result["times"]), p95_add_s=percentile(result["times"], 95),
        )
    return results


def measure_concurrent(stub: StubProcess, job: dict[str, Any], mem0_pythons: dict[str, Path],
                       store: str, latency: float) -> dict[str, Any]:
    stub.latency_ms = latency
    results = {"memkit": memkit_concurrent(stub, job, store)}
    for version, python in mem0_pythons.items():
        results[f"mem0 {version}"] = run_mem0(python, {"phase": "concurrent", **job}, stub)
    stub.reset()
    for r in results.values():
        r["ratio"] = r["concurrent_s"] / r["single_s"]
    return results


def search_job(turns: list[dict[str, Any]], questions: list[str], args: argparse.Namespace
               ) -> dict[str, Any]:
    per_user = args.per_user
    api_count = min(args.api_ingest, max(args.sizes))
    api_records: dict[str, list[str]] = {}
    for i in range(api_count):
        turn = turns[i % len(turns)]
        text = f"{turn['speaker']}: {turn['text']}"
        if i >= len(turns):
            text += f" [{i // len(turns)}]"
        api_records.setdefault(f"user-{i // per_user}", []).append(text)
    queries = [{"user_id": "user-0", "text": q} for q in questions[: args.queries]]
    return {"api_records": api_records, "queries": queries, "sizes": sorted(args.sizes),
            "limit": 10, "bulk": {"seed": 7, "dim": DIM, "per_user": per_user}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--mem0-versions", nargs="+", default=["1.0.11", "2.2.1"])
    parser.add_argument("--search-versions", nargs="*", default=["1.0.11"],
                        help="mem0 versions to run the search phase for")
    parser.add_argument("--adds", type=int, default=30, help="adds at latency 0")
    parser.add_argument("--slow-adds", type=int, default=8, help="adds at the slow latency")
    parser.add_argument("--turns-per-add", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=300.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--api-ingest", type=int, default=1_000,
                        help="memories inserted through each public API (infer=False)")
    parser.add_argument("--per-user", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--skip-search", action="store_true")
    parser.add_argument("--skip-adds", action="store_true",
                        help="only the search phase (the adds and concurrency phases are skipped)")
    parser.add_argument("--memkit-embedder", choices=["local", "stub"], default="local",
                        help="local: memkit's default in-process MiniLM; stub: the same "
                        "vectors over HTTP through litellm, as mem0 gets them")
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/vs_mem0.json")
    args = parser.parse_args()

    started = time.perf_counter()
    global EMBEDDER
    EMBEDDER = args.memkit_embedder
    pythons = {v: ensure_venv(v) for v in args.mem0_versions}
    store = memkit_store()
    turns = load_turns(args.data)
    from memkit._eval.locomo import load_samples

    questions = [qa["question"] for s in load_samples(args.data) for qa in s["qa"]]
    report: dict[str, Any] = {"machine": machine(), "memkit_store": store,
                              "mem0_store": "qdrant (local, on disk)",
                              "embedder": "all-MiniLM-L6-v2: mem0 from the stub over HTTP, "
                              f"memkit {args.memkit_embedder}",
                              "config": {k: str(v) if isinstance(v, Path) else v
                                         for k, v in vars(args).items()}}
    with StubProcess() as stub:
        report["tokenizer"] = stub.reset()["tokenizer"]
        if not args.skip_adds:
            _adds_phases(stub, turns, args, pythons, store, report)

        if not args.skip_search:
            stub.latency_ms = 0.0
            sjob = search_job(turns, questions, args)
            report["search"] = {"memkit": memkit_search(stub, sjob, store)}
            for version in args.search_versions:
                if version in pythons:
                    report["search"][f"mem0 {version}"] = run_mem0(
                        pythons[version], {"phase": "search", **sjob}, stub)
            _print_search(report["search"])
    report["seconds"] = time.perf_counter() - started
    print(f"\ntotal {report['seconds']:.0f} s")
    write_results(args.out, report)


def _adds_phases(stub: StubProcess, turns: list[dict[str, Any]], args: argparse.Namespace,
                 pythons: dict[str, Path], store: str, report: dict[str, Any]) -> None:
    adds = windows(turns, args.adds, args.turns_per_add, "conv")
    report["adds_latency_0"] = measure_adds(stub, adds, 0.0, pythons, store)
    _print_adds(report["adds_latency_0"], 0.0)
    slow = windows(turns, args.slow_adds, args.turns_per_add, "conv")
    report["adds_latency_slow"] = measure_adds(stub, slow, args.latency_ms, pythons, store)
    _print_adds(report["adds_latency_slow"], args.latency_ms)

    pool = windows(turns[200:], args.concurrency + 2, args.turns_per_add, "x")
    for i, add in enumerate(pool):
        add["user_id"] = f"c{i}"
    job = {"warmup": pool[0], "single": pool[1], "adds": pool[2:]}
    report["concurrent"] = measure_concurrent(stub, job, pythons, store, args.latency_ms)
    print(f"\n{args.concurrency} concurrent async adds, stub latency {args.latency_ms:.0f} ms")
    print(table(["system", "one add s", f"{args.concurrency} adds s", "ratio"], [
        [k, r["single_s"], r["concurrent_s"], r["ratio"]]
        for k, r in report["concurrent"].items()]))


def _print_adds(results: dict[str, Any], latency: float) -> None:
    print(f"\nadds (infer=True), stub latency {latency:.0f} ms")
    print(table(
        ["system", "adds", "LLM calls/add", "prompt tok/add", "median s/add", "p95 s/add",
         "changes/add"],
        [[k, r["adds"], r["llm_calls_per_add"], r["prompt_tokens_per_add"], r["median_add_s"],
          r["p95_add_s"], sum(r["events"]) / r["adds"]] for k, r in results.items()]))


def _print_search(results: dict[str, Any]) -> None:
    rows = []
    for system, r in results.items():
        ingest = r["api_ingest"]
        for size, s in r["sizes"].items():
            rows.append([system, size, ingest["count"] / ingest["seconds"],
                         1000 * median(s["search_api"]), 1000 * percentile(s["search_api"], 95),
                         1000 * median(s["search_store"]),
                         1000 * percentile(s["search_store"], 95)])
    print("\nsearch within one user's memories, limit 10 (each default store; ms)")
    print(table(["system", "memories", "API ingest/s", "API p50", "API p95", "store p50",
                 "store p95"], rows))


if __name__ == "__main__":
    main()
