"""32 concurrent ``AsyncMemory.add`` against one add, at a model latency of 300 ms.

    python bench/concurrency.py                        # memkit as it is
    python bench/concurrency.py --per-call-embedding   # each add embeds in its own thread
    python bench/concurrency.py --embedder hash        # no embedding model

The LLM is bench/stub_llm.py in its own process (300 ms a call); the embedder
is memkit's local model in-process (``--embedder hash``: none, to see the rest
of the pipeline); the store is the default SQLite file. Each round: one warm-up
add, one timed add, then ``--concurrency`` adds of other scopes at once, and
the CPU time this process spent on them. Reads
../shared/data/locomo/locomo10-dev.json for the turns (in place; ``--data``
elsewhere). Writes bench/results/concurrency.json.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import vs_mem0  # noqa: E402
from _common import machine, table, write_results  # noqa: E402
from stub_llm import StubProcess  # noqa: E402

from memkit.embeddings.base import Matrix  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=vs_mem0.DEFAULT_DATA)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=300.0)
    parser.add_argument("--turns-per-add", type=int, default=2)
    parser.add_argument("--per-call-embedding", action="store_true",
                        help="the embedder's plain thread per call (no micro-batching)")
    parser.add_argument("--embedder", choices=["local", "hash"], default="local",
                        help="hash: no model, to see the pipeline without the embedding's CPU")
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/concurrency.json")
    args = parser.parse_args()
    vs_mem0.EMBEDDER = args.embedder
    if args.per_call_embedding:
        from memkit.embeddings.local import LocalEmbedder

        async def per_call(self: LocalEmbedder, texts: Sequence[str]) -> Matrix:
            return await asyncio.to_thread(self.embed, texts)

        LocalEmbedder.aembed = per_call  # type: ignore[method-assign]
    turns = vs_mem0.load_turns(args.data)
    rounds: list[dict[str, Any]] = []
    with StubProcess() as stub:
        stub.reset()
        for r in range(args.rounds):
            pool = vs_mem0.windows(turns[200 + r * 50:], args.concurrency + 2,
                                   args.turns_per_add, "x")
            for i, add in enumerate(pool):
                add["user_id"] = f"r{r}c{i}"
            job = {"warmup": pool[0], "single": pool[1], "adds": pool[2:]}
            stub.latency_ms = args.latency_ms
            result = vs_mem0.memkit_concurrent(stub, job, "sqlite")
            result["ratio"] = result["concurrent_s"] / result["single_s"]
            rounds.append(result)
            print(f"round {r + 1}: one add {result['single_s']:.3f} s, "
                  f"{args.concurrency} adds {result['concurrent_s']:.3f} s "
                  f"({result['concurrent_cpu_s']:.3f} s CPU), ratio {result['ratio']:.2f}",
                  flush=True)
    ratio = statistics.median(r["ratio"] for r in rounds)
    print(table(["one add s", f"{args.concurrency} adds s", "their CPU s", "ratio"], [[
        statistics.median(r[key] for r in rounds)
        for key in ("single_s", "concurrent_s", "concurrent_cpu_s")] + [ratio]]))
    print("(medians over the rounds)")
    write_results(args.out, {"machine": machine(), "config": {
        k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "rounds": rounds, "median_ratio": ratio, "at": time.time()})


if __name__ == "__main__":
    main()
