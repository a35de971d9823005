"""Notes: indexing a folder of markdown files, re-indexing it, and how long an edit in a
watched folder takes to reach search.

    python bench/notes.py [--files 200] [--sections 5] [--edits 10] [--embedder local|hash]

Writes ``files`` markdown files of ``sections`` sections each into a temporary
folder and a SQLite store, then times: the first index, a re-index with nothing
changed, a re-index after one file changed. Then it watches the folder
(``Memory.watch_folder``, 500 ms debounce) and, ``edits`` times, writes a new
word into one file and polls keyword search (every 10 ms) until the section with
that word is found and the old one is gone: the latency from the write to search.

Results go to bench/results/notes.json.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import REPO, machine, median, percentile, table, write_results
from memkit import Memory
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM


def note(index: int, sections: int, word: str = "") -> str:
    parts = [f"# Note {index}\n"]
    for s in range(sections):
        parts.append(f"## Topic {s}\nFile {index} section {s} talks about item{index}x{s} "
                     f"and the weekly plan. {word if s == 0 else ''}\n")
    return "\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--sections", type=int, default=5)
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--embedder", choices=["local", "hash"], default="local")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "notes.json")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        folder.mkdir()
        for i in range(args.files):
            (folder / f"n{i:04d}.md").write_text(note(i, args.sections))
        components: dict[str, Any] = {"llm": ScriptedLLM(),
                                      "vector_store": SQLiteStore(str(Path(tmp) / "m.db"))}
        if args.embedder == "hash":
            components["embedder"] = HashEmbedder()
        with Memory(**components) as memory:
            timings: dict[str, float] = {}
            start = time.perf_counter()
            first = memory.index_folder(folder, user_id="u")
            timings["first index"] = time.perf_counter() - start
            start = time.perf_counter()
            again = memory.index_folder(folder, user_id="u")
            timings["re-index, nothing changed"] = time.perf_counter() - start
            (folder / "n0000.md").write_text(note(0, args.sections, "changed"))
            start = time.perf_counter()
            edited = memory.index_folder(folder, user_id="u")
            timings["re-index, one file changed"] = time.perf_counter() - start
            assert first.added == args.files * args.sections and again.unchanged == first.added
            assert edited.added == 1 and edited.removed == 1

            latencies: list[float] = []
            with memory.watch_folder(folder, user_id="u", debounce_ms=500):
                for edit in range(args.edits):
                    word = f"zebra{edit}"
                    path = folder / f"n{(edit * 7) % args.files:04d}.md"
                    written = time.perf_counter()
                    path.write_text(note(int(path.stem[1:]), args.sections, word))
                    while not memory.search(word, user_id="u", mode="keyword").results:
                        time.sleep(0.01)
                    latencies.append(time.perf_counter() - written)
            sections = len(memory.get_all(user_id="u", limit=100_000).results)
            assert sections == args.files * args.sections, sections

    print(table(["operation", "seconds"], [[k, v] for k, v in timings.items()]))
    print()
    print(table(["edit -> search (watch, 500 ms debounce)", "p50 s", "max s"],
                [[f"{args.edits} edits", median(latencies), max(latencies)]]))
    write_results(args.out, {
        "machine": machine(), "files": args.files, "sections_per_file": args.sections,
        "embedder": args.embedder, "seconds": timings,
        "watch_latency_s": {"p50": median(latencies), "p95": percentile(latencies, 95),
                            "max": max(latencies), "all": latencies},
    })


if __name__ == "__main__":
    main()
