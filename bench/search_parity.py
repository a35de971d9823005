"""Whether two checkouts of memkit rank the same: top-10 ids and scores of ``Memory.search``
for every LoCoMo question, over one 10k store (BENCHMARKS.md §2, issue 27).

    python bench/search_parity.py build /tmp/parity.db        # the store of bench/scale.py's
    python bench/search_parity.py run /tmp/parity.db --tree ../main --out /tmp/old.json
    python bench/search_parity.py run /tmp/parity.db --out /tmp/new.json
    python bench/search_parity.py compare /tmp/old.json /tmp/new.json

``build`` fills a SQLite file as ``bench/scale.py`` does for ``Memory.search`` at size:
60 LoCoMo sessions added with ``infer=False`` across five users, then LoCoMo turns with
random vectors up to 10,000 memories, all the user ``u0``'s. ``run`` searches a copy of
it (hybrid, the query's embedding included) for every question as ``u0`` and as ``u3``
with the memkit of ``--tree`` (this checkout by default); ``compare`` counts the
searches whose ids, or ids and scores, differ.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

from _common import locomo_sessions

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared/data/locomo/locomo10-dev.json"


def build(path: Path, data: Path, size: int) -> None:
    import numpy as np

    from memkit import Memory
    from memkit._eval.locomo import entries, load_samples
    from memkit.embeddings.local import LocalEmbedder
    from memkit.stores.base import Record

    samples = load_samples(data)
    sessions = locomo_sessions(samples)
    turns = [e.text for s in samples for e in entries(s, "turns") if e.text.strip()]
    embedder = LocalEmbedder()
    config = {"vector_store": {"provider": "sqlite", "config": {"path": str(path)}}}
    with Memory.from_config(config, embedder=embedder) as memory:
        for i, texts in enumerate(sessions[:60]):
            memory.add([{"role": "user", "content": t} for t in texts], user_id=f"u{i % 5}",
                       infer=False)
        store = memory.vector_store
        rng = np.random.default_rng(13)
        now = "2024-01-01T00:00:00+00:00"
        for start in range(store.count(), size, 1000):
            end = min(start + 1000, size)
            block = rng.standard_normal((end - start, embedder.dimension), dtype=np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            store.insert([Record(id=str(uuid.uuid4()), memory=turns[i % len(turns)],
                                 hash=f"{i:032x}", created_at=now, updated_at=now, user_id="u0",
                                 vector=block[i - start]) for i in range(start, end)])
        print(f"{path}: {store.count():,} memories")


def run(path: Path, data: Path, out: Path) -> None:
    import memkit
    from memkit import Memory
    from memkit._eval.locomo import load_samples
    from memkit.embeddings.local import LocalEmbedder

    questions = [qa["question"] for s in load_samples(data) for qa in s["qa"]]
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "memkit.db"
        shutil.copy(path, copy)
        config = {"vector_store": {"provider": "sqlite", "config": {"path": str(copy)}}}
        with Memory.from_config(config, embedder=LocalEmbedder()) as memory:
            found = {f"{user}|{q}": [[r.id, r.score] for r in memory.search(
                q, user_id=user, limit=10).results] for q in questions for user in ("u0", "u3")}
    out.write_text(json.dumps(found))
    print(f"{len(found)} searches with {Path(memkit.__file__).parent} -> {out}")


def compare(old: Path, new: Path) -> int:
    a, b = json.loads(old.read_text()), json.loads(new.read_text())
    if a.keys() != b.keys():
        print("the two runs searched different questions")
        return 1
    ids = sum([i for i, _ in a[k]] != [i for i, _ in b[k]] for k in a)
    either = sum(a[k] != b[k] for k in a)
    print(f"{len(a)} searches: top-10 ids differ in {ids}, ids or scores in {either}")
    return 1 if either else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["build", "run", "compare"])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--tree", type=Path, default=REPO, help="the memkit checkout to run")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=Path("parity.json"))
    args = parser.parse_args()
    sys.path.insert(0, str(args.tree.resolve()))
    if args.what == "build":
        build(args.files[0], args.data, args.size)
    elif args.what == "run":
        run(args.files[0], args.data, args.out)
    else:
        sys.exit(compare(args.files[0], args.files[1]))


if __name__ == "__main__":
    main()
