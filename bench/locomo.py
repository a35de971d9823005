"""LoCoMo retrieval quality through memkit's public API (BENCHMARKS.md §1).

    python bench/locomo.py                      # turns + observations, 3 search modes
    python bench/locomo.py --data FILE --mode turns --search hybrid
    python bench/locomo.py --cross-validate     # + fusion weights chosen leaving one out
    python bench/locomo.py --embedder e5        # the stronger embedder (memkit-ai[e5])

Reads ../shared/data/locomo/locomo10-dev.json by default (non-commercial data:
read in place, never copied). Prints the tables and writes
bench/results/locomo.json. About a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _common import machine, write_results  # noqa: E402

from memkit._eval.locomo import format_report, run_locomo  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared/data/locomo/locomo10-dev.json"


class Progress:
    """A one-line progress report on stderr, redrawn at most every half second."""

    def __init__(self) -> None:
        self.last = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if done == total or now - self.last > 0.5:
            self.last = now
            end = "\n" if done == total else ""
            print(f"\r  {stage}: {done}/{total}", end=end, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="LoCoMo retrieval recall through memkit")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo-format JSON file")
    parser.add_argument("--mode", choices=["turns", "observations"], action="append")
    parser.add_argument("--search", choices=["keyword", "vector", "hybrid"], action="append")
    parser.add_argument("--progress", action="store_true", help="report progress on stderr")
    parser.add_argument("--cross-validate", action="store_true",
                        help="choose the hybrid weights leaving one conversation out (turns)")
    parser.add_argument("--embedder", default="local", choices=["local", "e5"],
                        help="the embedder: local all-MiniLM-L6-v2 (default) or e5 (memkit-ai[e5])")
    parser.add_argument("--turn-by-turn", action="store_true",
                        help="one add per turn: no neighbouring-turn context (the old protocol)")
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/locomo.json")
    args = parser.parse_args()
    modes = args.mode or ["turns", "observations"]
    searches = args.search or ["keyword", "vector", "hybrid"]
    started = time.perf_counter()
    reports = []
    for mode in modes:
        progress = Progress() if sys.stderr.isatty() or args.progress else None
        report = run_locomo(args.data, mode=mode, search=searches, progress=progress,
                            cross_validation=args.cross_validate and mode == "turns",
                            dialogue=not args.turn_by_turn, embedder=args.embedder)
        print(format_report(report), flush=True)
        print()
        reports.append(report)
    elapsed = time.perf_counter() - started
    print(f"total {elapsed:.1f} s")
    write_results(args.out, {"machine": machine(), "seconds": elapsed, "reports": reports})


if __name__ == "__main__":
    main()
