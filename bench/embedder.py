"""Benchmark the local embedder: cold load time and throughput.

    python bench/embedder.py [--threads N] [--repeats R]

Prints a table and writes bench/results/embedder.json. Targets (reported, not
enforced): load < 1 s, >= 400 sentences/s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "embedder.json"
LOAD_TARGET_S = 1.0
THROUGHPUT_TARGET = 400.0

SUBJECTS = ["The user", "My sister", "Our team lead", "The customer", "Ada", "The landlord"]
VERBS = ["prefers", "dislikes", "asked about", "is planning", "forgot", "recommended"]
OBJECTS = [
    "dark roast coffee in the morning",
    "a quiet table near the window",
    "the quarterly budget review",
    "hiking trips in the Alps",
    "vegetarian recipes without mushrooms",
    "Python type hints and strict linting",
    "the flight to Lisbon on Friday",
    "jazz records from the fifties",
]
WHEN = ["these days", "this month", "on weekdays", "since last year", "for now"]
CLAUSES = [
    "because the last attempt went badly and nobody wanted to repeat it",
    "although the schedule next week is already full of meetings",
    "and wants a reminder two days before it happens",
    "since moving to a smaller flat closer to the office",
    "which came up again during the call with the support team",
    "after reading a long article about it on the train home",
]

# Run in a fresh interpreter, so imports and the model load are cold.
COLD_LOAD = """
import json, sys, time
start = time.perf_counter()
from memkit.embeddings.local import LocalEmbedder
embedder = LocalEmbedder(threads=int(sys.argv[1]))
embedder.embed(["warm up"])
print(json.dumps({"load_s": time.perf_counter() - start}))
"""


def short_sentence(rng: random.Random) -> str:
    """About ten words."""
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(WHEN)}."


def medium_sentence(rng: random.Random) -> str:
    """About forty words."""
    parts = [
        f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(CLAUSES)}" for _ in range(2)
    ]
    return "; ".join(parts) + "."


def cold_load(threads: int, repeats: int) -> dict[str, Any]:
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    in_process, wall = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-c", COLD_LOAD, str(threads)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        wall.append(time.perf_counter() - start)
        in_process.append(json.loads(result.stdout)["load_s"])
    return {
        "load_s_median": statistics.median(in_process),
        "load_s_min": min(in_process),
        "process_wall_s_median": statistics.median(wall),
    }


def throughput(embedder: Any, texts: list[str], repeats: int) -> dict[str, float]:
    embedder.embed(texts[:8])
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        embedder.embed(texts)
        rates.append(len(texts) / (time.perf_counter() - start))
    return {"median": statistics.median(rates), "best": max(rates)}


def query_latency_ms(embedder: Any, texts: list[str]) -> float:
    timings = []
    for text in texts:
        start = time.perf_counter()
        embedder.embed([text])
        timings.append((time.perf_counter() - start) * 1000)
    return statistics.median(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sentences", type=int, default=512, help="per throughput run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from memkit.embeddings.local import LocalEmbedder

    rng = random.Random(0)
    short = [short_sentence(rng) for _ in range(args.sentences)]
    medium = [medium_sentence(rng) for _ in range(args.sentences // 2)]

    load = cold_load(args.threads, args.repeats)
    embedder = LocalEmbedder(batch_size=args.batch_size, threads=args.threads)
    short_rate = throughput(embedder, short, args.repeats)
    medium_rate = throughput(embedder, medium, args.repeats)
    latency = query_latency_ms(embedder, short[:50])
    tokens = embedder_tokens(embedder, short, medium)

    import onnxruntime

    results = {
        "model": embedder.model_name,
        "threads": args.threads,
        "batch_size": args.batch_size,
        "cpu_count": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "onnxruntime": onnxruntime.__version__,
        "cold_load": load,
        "short": {"sentences": len(short), "mean_tokens": tokens[0], "per_s": short_rate},
        "medium": {"sentences": len(medium), "mean_tokens": tokens[1], "per_s": medium_rate},
        "single_query_latency_ms_median": latency,
        "targets": {"load_s": LOAD_TARGET_S, "sentences_per_s": THROUGHPUT_TARGET},
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    print_table(results)
    print(f"\nwritten to {args.output}")


def embedder_tokens(embedder: Any, short: list[str], medium: list[str]) -> tuple[float, float]:
    import tokenizers

    tokenizer = tokenizers.Tokenizer.from_file(str(embedder.files.tokenizer))
    tokenizer.no_padding()

    def mean_tokens(texts: list[str]) -> float:
        return statistics.fmean(len(e.ids) for e in tokenizer.encode_batch(texts))

    return mean_tokens(short), mean_tokens(medium)


def print_table(results: dict[str, Any]) -> None:
    def verdict(ok: bool) -> str:
        return "ok" if ok else "below target"

    load = results["cold_load"]
    rows = [
        (
            "cold load (import + first embed)",
            f"{load['load_s_median']:.2f} s (min {load['load_s_min']:.2f})",
            f"< {LOAD_TARGET_S:.0f} s",
            verdict(load["load_s_median"] < LOAD_TARGET_S),
        ),
        ("  whole process incl. interpreter", f"{load['process_wall_s_median']:.2f} s", "", ""),
    ]
    for kind in ("short", "medium"):
        entry = results[kind]
        rate = entry["per_s"]
        rows.append(
            (
                f"{kind} (~{entry['mean_tokens']:.0f} tokens), sentences/s",
                f"{rate['median']:.0f} (best {rate['best']:.0f})",
                f">= {THROUGHPUT_TARGET:.0f}",
                verdict(rate["median"] >= THROUGHPUT_TARGET),
            )
        )
    rows.append(("single query latency", f"{results['single_query_latency_ms_median']:.1f} ms", "", ""))
    header = (
        f"{results['model']}, {results['threads']} threads, batch {results['batch_size']}, "
        f"load average {results['load_average_1m']}"
    )
    print(header)
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
