"""LLM calls and prompt tokens per add with graph memory on and off: memkit and mem0 1.0.11.

    python bench/graph_cost.py [--adds 30]

The workload and the stub are ``vs_mem0.py``'s (windows of 2 LoCoMo turns, one
scope, stub latency 0, one warm-up add first). With the graph on, memkit
writes its SQLite graph in the store's file, and mem0 1.0.11 uses Kuzu, the one
graph store of mem0 that runs embedded (``kuzu`` and ``rank-bm25`` are
installed into its venv beside ``mem0ai``). The stub gives both systems the
same entities and relations (``bench/stub_llm.py``, "graph requests"). Results
go to bench/results/graph_cost.json.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from _common import machine, median, table, write_results  # noqa: E402
from stub_llm import StubProcess  # noqa: E402
from vs_mem0 import DEFAULT_DATA, ensure_venv, load_turns, memkit_config, run_mem0, windows  # noqa: E402

MEM0_VERSION = "1.0.11"
GRAPH_EXTRAS = ["kuzu==0.11.3", "rank-bm25==0.2.2"]


def mem0_python() -> Path:
    python = ensure_venv(MEM0_VERSION)
    probe = [str(python), "-c", "import kuzu, rank_bm25"]
    if subprocess.run(probe, capture_output=True).returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "-q", *GRAPH_EXTRAS], check=True)
    return python


def memkit_adds(stub: StubProcess, adds: list[dict[str, Any]], graph: bool) -> dict[str, Any]:
    from memkit import Memory

    config = memkit_config(stub, tempfile.mkdtemp(), "sqlite")
    if graph:
        config["graph_store"] = {"provider": "sqlite"}
    times, relations = [], 0
    with Memory.from_config(config) as memory:
        memory.add(adds[0]["messages"], user_id="warm-up")
        stub.reset()
        for add in adds:
            start = time.perf_counter()
            result = memory.add(add["messages"], user_id=add["user_id"])
            times.append(time.perf_counter() - start)
            relations += len(result.relations)
        if graph:
            entities = len(memory.get_entities(user_id=adds[0]["user_id"], limit=10_000))
    out: dict[str, Any] = {"times": times, "relations": relations}
    if graph:
        out["entities"] = entities
    return out


def summary(result: dict[str, Any]) -> dict[str, Any]:
    n, stub = len(result["times"]), result["stub"]
    return {"adds": n, "llm_calls_per_add": stub["llm_calls"] / n,
            "prompt_tokens_per_add": stub["prompt_tokens"] / n,
            "schema_tokens_per_add": stub["schema_tokens"] / n,
            "calls_by_kind": stub["calls"], "median_add_s": median(result["times"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--adds", type=int, default=30)
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/graph_cost.json")
    args = parser.parse_args()
    python = mem0_python()
    adds = windows(load_turns(args.data), args.adds, 2, "conv")
    report: dict[str, Any] = {"machine": machine(), "adds": args.adds, "systems": {}}
    with StubProcess() as stub:
        report["tokenizer"] = stub.reset()["tokenizer"]
        for graph in (False, True):
            label = "graph on" if graph else "graph off"
            result = memkit_adds(stub, adds, graph)
            result["stub"] = stub.reset()
            report["systems"][f"memkit, {label}"] = {**summary(result), **{
                k: result[k] for k in ("relations", "entities") if k in result}}
            result = run_mem0(python, {"phase": "adds", "adds": adds, "graph": graph}, stub)
            result["stub"] = stub.reset()
            report["systems"][f"mem0 {MEM0_VERSION}, {label}"] = summary(result)
    print(table(["system", "LLM calls/add", "prompt tok/add", "schema tok/add", "median s/add"],
                [[k, r["llm_calls_per_add"], r["prompt_tokens_per_add"],
                  r["schema_tokens_per_add"], r["median_add_s"]]
                 for k, r in report["systems"].items()]))
    write_results(args.out, report)


if __name__ == "__main__":
    main()
