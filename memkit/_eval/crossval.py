"""Choosing search settings on LoCoMo by leave-one-conversation-out cross-validation.

Every candidate setting searches every question once, over memories stored
once. Then, for each conversation in turn, the setting with the best pooled
recall@10 on the *other* conversations is chosen and scored on the held-out
one. The spread of those held-out scores is what a new conversation can
expect; the settings chosen per fold show how stable the choice is.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memkit._config import SearchConfig

if TYPE_CHECKING:
    from memkit._memory import Memory

METRIC_K = "10"
_DEFAULT = SearchConfig()


@dataclass(frozen=True, slots=True)
class Setting:
    """One point of the grid: the ``search`` section of a memkit config."""

    vector_weight: float
    keyword_weight: float
    candidates: int = _DEFAULT.candidates
    keyword_exponent: float = _DEFAULT.keyword_exponent
    temporal_weight: float = _DEFAULT.temporal_weight
    common_word_share: float = _DEFAULT.common_word_share
    context_share: float = _DEFAULT.context_share
    context_turns: int = _DEFAULT.context_turns
    question_penalty: float = _DEFAULT.question_penalty

    @property
    def label(self) -> str:
        return (f"v{self.vector_weight:g}/k{self.keyword_weight:g}/c{self.candidates}"
                f"/e{self.keyword_exponent:g}/t{self.temporal_weight:g}/s{self.common_word_share:g}"
                f"/n{self.context_share:g}/r{self.context_turns}/q{self.question_penalty:g}")

    def config(self) -> dict[str, Any]:
        return {"vector_weight": self.vector_weight, "keyword_weight": self.keyword_weight,
                "candidates": self.candidates, "keyword_exponent": self.keyword_exponent,
                "temporal_weight": self.temporal_weight,
                "common_word_share": self.common_word_share,
                "context_share": self.context_share, "context_turns": self.context_turns,
                "question_penalty": self.question_penalty}


def _grid() -> tuple[Setting, ...]:
    """Each knob varied around the defaults, the others at theirs (a full product
    would search every question a hundred times)."""
    weights = (_DEFAULT.vector_weight, _DEFAULT.keyword_weight)
    settings = [Setting(vector, round(1.0 - vector, 2), candidates)
                for vector in (0.7, 0.6, 0.5, 0.4) for candidates in (50, 100, 200)]
    settings += [Setting(*weights, keyword_exponent=e) for e in (1.0, 2.0, 3.0)]
    settings += [Setting(*weights, temporal_weight=t) for t in (0.0, 0.2, 0.4)]
    settings += [Setting(*weights, common_word_share=s) for s in (0.25, 0.5, 1.0)]
    settings += [Setting(*weights, context_share=n) for n in (0.0, 0.1, 0.3)]
    settings += [Setting(*weights, context_turns=r) for r in (2, 4)]
    settings += [Setting(*weights, question_penalty=q) for q in (0.0, 0.01, 0.03)]
    return tuple(dict.fromkeys(settings))


GRID = _grid()

Evaluate = Callable[["Memory"], dict[str, Any]]
"""Runs every question through a memory; returns ``evaluate()``'s report."""


def cross_validate(
    view: Callable[[dict[str, Any]], Memory], evaluate: Evaluate,
    grid: Sequence[Setting] = GRID,
) -> dict[str, Any]:
    """Score every setting per conversation, then choose by leave-one-conversation-out.

    ``view(search_config)`` gives a memory over the stored conversations that
    searches with that ``search`` config section.
    """
    per_setting: dict[str, dict[str, dict[str, Any]]] = {}
    for setting in grid:
        per_setting[setting.label] = evaluate(view(setting.config()))["conversations"]
    conversations = list(next(iter(per_setting.values())))
    folds = []
    for held_out in conversations:
        training = [c for c in conversations if c != held_out]
        chosen = max(grid, key=lambda s: _pooled(per_setting[s.label], training))
        folds.append({
            "held_out": held_out,
            "chosen": chosen.label,
            "training_recall": _pooled(per_setting[chosen.label], training),
            "held_out_recall": per_setting[chosen.label][held_out]["recall"][METRIC_K],
        })
    held = [f["held_out_recall"] for f in folds]
    return {
        "metric": f"paper-style overall R@{METRIC_K}",
        "settings": {
            label: {c: v["recall"][METRIC_K] for c, v in by_conversation.items()}
            | {"pooled": _pooled(by_conversation, conversations)}
            for label, by_conversation in per_setting.items()
        },
        "folds": folds,
        "held_out_mean": statistics.fmean(held),
        "held_out_stdev": statistics.stdev(held) if len(held) > 1 else 0.0,
        "held_out_min": min(held),
        "held_out_max": max(held),
    }


def _pooled(by_conversation: dict[str, dict[str, Any]], conversations: Sequence[str]) -> float:
    """Recall over the questions of these conversations together (question-weighted)."""
    questions = sum(by_conversation[c]["questions"] for c in conversations)
    total = sum(by_conversation[c]["recall"][METRIC_K] * by_conversation[c]["questions"]
                for c in conversations)
    return float(total / questions) if questions else 0.0


def format_cross_validation(result: dict[str, Any]) -> str:
    settings = result["settings"]
    conversations = [c for c in next(iter(settings.values())) if c != "pooled"]
    lines = [f"cross-validation ({result['metric']}, leave one conversation out)",
             f"{'setting':<44}" + "".join(f"{c:>10}" for c in conversations) + f"{'pooled':>10}"]
    for label, row in settings.items():
        lines.append(f"{label:<44}" + "".join(f"{row[c]:10.1f}" for c in conversations)
                     + f"{row['pooled']:10.1f}")
    lines.append("")
    for fold in result["folds"]:
        lines.append(f"held out {fold['held_out']:<10} chosen {fold['chosen']:<44} "
                     f"training {fold['training_recall']:5.1f}  held out {fold['held_out_recall']:5.1f}")
    lines.append(f"held-out R@{METRIC_K}: mean {result['held_out_mean']:.1f}, "
                 f"sd {result['held_out_stdev']:.1f}, range {result['held_out_min']:.1f}"
                 f"-{result['held_out_max']:.1f}")
    return "\n".join(lines)
