"""The search defaults chosen by leaving one LoCoMo dev conversation out (issue 27).

    python bench/loo.py [--data ../shared/data/locomo/locomo10-dev.json]

Stores the dev conversations' turns once (the default local embedder, SQLite), then
searches every question with every setting of ``memkit._eval.crossval.GRID`` (each knob
of the ``search`` config varied around its default). For each conversation in turn the
setting with the best pooled R@10 on the *other* conversations is chosen and scored on
the held-out one; the held-out scores pooled over the questions say what a conversation
not used to choose the settings can expect. The setting with the best pooled R@10 on
every dev conversation is what the defaults should be: the script says whether they are.
It also reports the defaults' R@10 per dev conversation (target ≥ 78 each) and the
observations mode (the dataset's fact-like summaries: target ≥ 70), with the defaults and
with every setting of the grid, so that a choice made on turns shows what it does to
short fact-like memories. Paper-style R@10 throughout: all categories, a question
without evidence counts as found.

The data is read in place (non-commercial: never copied into the repository).
Results: bench/results/loo.json. About 6.5 minutes on the 2 shared cores at load 6-8
(the observations grid included; 5 at load 4 without it).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _common import machine, table, write_results  # noqa: E402

from memkit._eval.crossval import Setting, format_cross_validation  # noqa: E402
from memkit._eval.locomo import run_locomo  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared/data/locomo/locomo10-dev.json"
K = "10"


def pooled(recall: dict[str, float], questions: dict[str, int], conversations: list[str]) -> float:
    """R@10 over these conversations' questions together."""
    total = sum(questions[c] for c in conversations)
    return sum(recall[c] * questions[c] for c in conversations) / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo-format JSON file")
    parser.add_argument("--out", type=Path, default=REPO / "bench/results/loo.json")
    args = parser.parse_args()
    started = time.perf_counter()

    turns = run_locomo(args.data, mode="turns", search="hybrid", cross_validation=True)
    defaults = turns["runs"]["hybrid"]
    cv = turns["cross_validation"]
    conversations = list(defaults["conversations"])
    questions = {c: defaults["conversations"][c]["questions"] for c in conversations}
    per_default = {c: defaults["conversations"][c]["recall"][K] for c in conversations}
    default_label = _default_label()
    on_all = max(cv["settings"], key=lambda label: cv["settings"][label]["pooled"])
    held_out = {f["held_out"]: f["held_out_recall"] for f in cv["folds"]}
    observations = run_locomo(args.data, mode="observations", search="hybrid",
                              cross_validation=True)
    obs = observations["runs"]["hybrid"]
    obs_settings = {label: row["pooled"]
                    for label, row in observations["cross_validation"]["settings"].items()}
    obs_best = max(obs_settings, key=lambda label: obs_settings[label])

    print(format_cross_validation(cv))
    print()
    print(table(["conversation", "questions", "defaults R@10", "chosen without it",
                 "its R@10 (held out)"],
                [[c, questions[c], round(per_default[c], 1),
                  next(f["chosen"] for f in cv["folds"] if f["held_out"] == c),
                  round(held_out[c], 1)] for c in conversations]))
    print()
    print(table(["setting", "turns R@10", "observations R@10"],
                [[label, round(row["pooled"], 1), round(obs_settings[label], 1)]
                 for label, row in cv["settings"].items()]))
    summary = {
        "defaults": default_label,
        "chosen_on_every_dev_conversation": on_all,
        "defaults_are_the_choice": on_all == default_label,
        "defaults_r10_per_conversation": per_default,
        "defaults_r10_pooled": defaults["paper_overall"]["recall"][K],
        "defaults_r10_min": min(per_default.values()),
        "held_out_r10_pooled": pooled(held_out, questions, conversations),
        "held_out_r10_per_conversation": held_out,
        "observations_r10_pooled": obs["paper_overall"]["recall"][K],
        "observations_r10_per_conversation": {c: v["recall"][K]
                                              for c, v in obs["conversations"].items()},
        "observations_best_setting": obs_best,
        "observations_best_r10_pooled": obs_settings[obs_best],
    }
    print()
    for key, value in summary.items():
        print(f"{key}: {_fmt(value)}")
    elapsed = time.perf_counter() - started
    print(f"total {elapsed:.0f} s")
    write_results(args.out, {"machine": machine(), "seconds": elapsed, "summary": summary,
                             "turns": turns, "observations": observations})


def _default_label() -> str:
    from memkit._config import SearchConfig

    d = SearchConfig()
    return Setting(d.vector_weight, d.keyword_weight, d.candidates, d.keyword_exponent,
                   d.temporal_weight, d.common_word_share, d.context_share,
                   d.context_turns, d.question_penalty).label


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.1f}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v:.1f}" for k, v in value.items())
    return str(value)


if __name__ == "__main__":
    main()
