"""The startup briefing: open tasks, memories marked ``surface="startup"`` and the most
important ones, in that order, within a token budget.

Tokens are counted as characters / 4, rounded up (close for English text with
common tokenizers; no tokenizer is loaded). Each memory is one line; a memory that
does not fit is left out and the next ones are tried.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from memkit._filters import Condition, Filter, Operator, Scalar, all_of
from memkit._notes.models import Section, StartupContext, StartupItem
from memkit._pipeline.effects import Flow, ListRecords, ask
from memkit._pipeline.features.lifecycle import Lifecycle
from memkit._pipeline.features.task_fields import OPEN_STATUSES
from memkit._pipeline.inputs import bounded_int
from memkit._pipeline.write.apply import scan
from memkit._pipeline.write.versions import valid_at
from memkit.stores.base import Record

MAX_BUDGET_TOKENS = 1_000_000
_IMPORTANT_POOL = 1000
_TITLES: dict[Section, str] = {"task": "## Open tasks", "startup": "## Remember",
                               "important": "## Important"}


def count_tokens(text: str) -> int:
    """An estimate: characters / 4, rounded up."""
    return math.ceil(len(text) / 4)


def budget_of(value: object) -> int:
    return bounded_int("budget_tokens", value, MAX_BUDGET_TOKENS)


def _line(section: Section, record: Record) -> str:
    text = " ".join(record.memory.split())
    if section == "task":
        return f"- [{record.metadata.get('status', 'open')}] {text} (task id: {record.id})"
    return f"- {text}"


def _closed_task(record: Record) -> bool:
    return record.memory_type == "task" and record.metadata.get("status") not in OPEN_STATUSES


def _importance(record: Record) -> float:
    return record.importance if record.importance is not None else 0.0


def _where(field: str, operator: Operator, value: Scalar | tuple[Scalar, ...]) -> Condition:
    return Condition(field=field, operator=operator, value=value)


def _newest_first(records: Iterable[Record]) -> list[Record]:
    return sorted(records, key=lambda r: (r.created_at, r.id), reverse=True)


def startup_flow(scope: Filter | None, budget_tokens: int, now: str,
                 lifecycle: Lifecycle) -> Flow[StartupContext]:
    current = all_of(scope, valid_at(now))
    tasks = yield from scan(all_of(current, _where("memory_type", "eq", "task"),
                                   _where("status", "in", OPEN_STATUSES)))
    surfaced = yield from scan(all_of(current, _where("surface", "eq", "startup")))
    weighed, _ = yield from ask(ListRecords(all_of(current, _where("importance", "gte", 0)),
                                   _IMPORTANT_POOL, None, "newest"))
    # stable sorts: newest first among equals
    in_progress_first = sorted(_newest_first(tasks), key=lambda r: (
        r.metadata.get("status") != "in_progress", -_importance(r)))
    by_importance = sorted(_newest_first(surfaced), key=lambda r: -_importance(r))
    most_important = sorted(weighed, key=lambda r: (-_importance(r),
                                                    -lifecycle.confidence(r, now)))
    return _fill([("task", in_progress_first), ("startup", by_importance),
                  ("important", most_important)], budget_tokens, now, lifecycle)


def _fill(ordered: Iterable[tuple[Section, list[Record]]], budget: int, now: str,
          lifecycle: Lifecycle) -> StartupContext:
    lines: list[str] = []
    items: list[StartupItem] = []
    shown: set[str] = set()
    used = omitted = 0
    for section, records in ordered:
        titled = False
        for record in records:
            if record.id in shown or _closed_task(record):
                continue
            shown.add(record.id)
            line = _line(section, record)
            cost = count_tokens(line + "\n")
            title_cost = 0 if titled else count_tokens(_TITLES[section] + "\n\n")
            if used + cost + title_cost > budget:
                omitted += 1
                continue
            if not titled:
                lines.extend([*([""] if lines else []), _TITLES[section]])
                titled = True
            lines.append(line)
            used += cost + title_cost
            items.append(StartupItem(section=section, tokens=cost, memory=record.to_item(
                confidence=lifecycle.confidence(record, now))))
    text = "\n".join(lines) + ("\n" if lines else "")
    return StartupContext(text=text, items=items, tokens=used, budget_tokens=budget,
                          omitted=omitted)
