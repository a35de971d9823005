"""The dashboard's first render with 10,000 memories in one scope, in Chromium.

    python bench/ui.py [--memories 10000] [--runs 10] [--chromium /usr/bin/chromium]

Fills a SQLite store (HashEmbedder, so the time is the dashboard's and the API's, not a
model's), serves it with memkit.server + memkit.ui on 127.0.0.1, and opens each view in a
fresh browser context ``runs`` times. A view's time is from the start of the navigation to
the ``performance.mark`` the dashboard sets once the view is in the page: HTML, scripts
and the view's own requests included. A tab that knows its scope (sessionStorage, as after
the first view) draws at once; a new tab first reads the scope list (``GET /v1/stats/``, a
pass over every memory), so that case is measured too.

Results go to bench/results/ui.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import REPO, machine, median, percentile, table, write_results
from memkit import AsyncMemory, Memory
from memkit.server import create_app
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder
from memkit.ui import mount_ui
from tests.server.conftest import serving

NEW = "sessionStorage.setItem('memkit.key', 'bench')"
KNOWN = NEW + """; sessionStorage.setItem('memkit.scope', '{"user_id": "alice"}')"""
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
#: (what, the view's address, the mark it sets, whether the tab knows its scope already)
CASES = [("memories", "#/memories", "memories", True),
         ("memories, new tab", "#/memories", "memories", False),
         ("search (hybrid)", "#/memories?q=weekly+plan&mode=hybrid", "memories", True),
         ("overview", "#/overview", "overview", True),
         ("tasks", "#/tasks", "tasks", True),
         ("one memory", "#/memory/{id}", "memory", True)]


def fill(path: str, count: int) -> None:
    memory = Memory(embedder=HashEmbedder(), vector_store=SQLiteStore(path))
    kinds = ["fact", "preference", "task", "decision"]
    for start in range(0, count, 1000):
        for kind in kinds:
            batch = [{"role": "user", "content": f"Memory {i} about the weekly plan and item {i % 97}"}
                     for i in range(start, min(start + 1000, count)) if i % len(kinds) == kinds.index(kind)]
            memory.add(batch, user_id="alice", infer=False, memory_type=kind,
                       importance=(start // 1000 % 10) / 10)
    memory.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "ui.json")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    times: dict[str, list[float]] = {case[0]: [] for case in CASES}
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "memkit.db")
        fill(path, args.memories)
        app = create_app(AsyncMemory(embedder=HashEmbedder(), vector_store=SQLiteStore(path)),
                         api_keys={"bench": {}})
        mount_ui(app)
        with serving(app) as url, sync_playwright() as p:
            some = httpx.get(f"{url}/v1/memories/", params={"user_id": "alice", "limit": 1},
                             headers={"Authorization": "Bearer bench"}).json()["results"][0]["id"]
            browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
            for run in range(args.runs + 1):  # the first run warms the server up, not counted
                for name, view, mark, known in CASES:
                    context = browser.new_context()
                    context.add_init_script(KNOWN if known else NEW)
                    page = context.new_page()
                    page.goto(f"{url}/ui/{view.format(id=some)}")
                    page.wait_for_function("mark => performance.getEntriesByName(mark).length > 0",
                                           arg=f"memkit:{mark}", timeout=60_000)
                    ms = page.evaluate("mark => performance.getEntriesByName(mark)[0].startTime",
                                       f"memkit:{mark}")
                    if run:
                        times[name].append(float(ms))
                    context.close()
            browser.close()
    rows: list[list[Any]] = [[name, f"{median(t):.0f}", f"{percentile(t, 90):.0f}", f"{max(t):.0f}"]
                             for name, t in times.items()]
    print(table(["view", "median ms", "p90 ms", "max ms"], rows))
    write_results(args.out, {
        "benchmark": "ui first render", "memories": args.memories, "runs": args.runs,
        "machine": machine(),
        "views": {name: {"median_ms": round(median(t), 1), "p90_ms": round(percentile(t, 90), 1),
                         "max_ms": round(max(t), 1), "runs_ms": [round(x, 1) for x in t]}
                  for name, t in times.items()},
    })


if __name__ == "__main__":
    main()
