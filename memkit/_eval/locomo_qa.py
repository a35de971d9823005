"""Answer accuracy on LoCoMo: ``add`` with inference, ``search``, an answering LLM, an LLM judge.

The protocol of the mem0 paper (Chhikara et al., 2025), through memkit's public API:

- every session of a conversation goes through ``Memory.add(..., infer=True)``
  ``batch`` turns at a time (mem0: 2), each turn a user message named after its
  speaker, dated by the session's date;
- each question of categories 1-4 (category 5, adversarial, is left out as in the
  paper) is searched in its conversation's scope; the ``top_k`` memories, each
  prefixed with its date, go to the answering LLM (:data:`answers.ANSWER_SYSTEM`)
  at temperature 0;
- a judge LLM labels each answer CORRECT or WRONG against the gold answer; token
  F1 and BLEU-1 are computed as in the paper (:mod:`memkit._eval.answers`).

Where memkit differs from the paper: one scope per conversation (mem0 keeps one
per speaker, each speaker's turns as the user's, and searches both); memkit's own
extraction and decision prompts (mem0 added custom instructions); the prompts of
the answer and the judge are memkit's words with the same instructions; one run,
not the mean of ten.

Every finished step (an add, an answer, a verdict) is appended to ``log.jsonl`` in
the run's folder before the next starts, beside the memory's SQLite file, so a run
that stops (killed, a provider outage) continues where it was when started again.

    >>> run = LocomoQA("locomo10.json", "runs/qa", QASettings(llm="gpt-4o-mini"), limit=20)
    >>> print(format_estimate(run.estimate()))
    >>> report = run.run(memory, answerer, judge)
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memkit._eval.answers import (
    ANSWER_SYSTEM,
    ANSWER_USER,
    JUDGE_SCHEMA,
    JUDGE_SYSTEM,
    JUDGE_USER,
    bleu1,
    f1,
    judge_label,
)
from memkit._eval.locomo import CATEGORIES, Progress, entries, load_samples
from memkit.llms.base import LLM, LLMRequest, LLMResponse

if TYPE_CHECKING:
    from memkit._memory import Memory
    from memkit._models import MemoryItem

QA_CATEGORIES = (4, 1, 2, 3)
"""Single-hop, multi-hop, temporal, open-domain: the categories the paper judges."""

# Token figures for the estimate (prompt and completion per call), from memkit's
# prompts and the answer/judge prompts; text is counted at 4 characters a token.
_EXTRACTION_PROMPT, _DECISION_PROMPT, _ONE_CALL_PROMPT, _MEMORY_TOKENS = 180, 140, 285, 22
_ANSWER_PROMPT, _JUDGE_PROMPT = 110, 140
_ADD_COMPLETION, _ANSWER_COMPLETION, _JUDGE_COMPLETION = 120, 12, 8


@dataclass(frozen=True, slots=True)
class QASettings:
    """What a run is: the models, turns per add and memories per answer."""

    llm: str
    judge: str | None = None
    batch: int = 2
    top_k: int = 30
    #: search with rerank=True (the memory's configured reranker)
    rerank: bool = False
    #: how each add asks the LLM: "two_calls" (memkit's default) or "one_call"
    add_mode: str = "two_calls"

    @property
    def judge_model(self) -> str:
        return self.judge or self.llm


@dataclass(frozen=True, slots=True)
class AddStep:
    key: str
    user_id: str
    messages: list[dict[str, str]]
    timestamp: datetime | None


@dataclass(frozen=True, slots=True)
class Question:
    key: str
    user_id: str
    question: str
    answer: str
    category: int


class RunLog:
    """``log.jsonl``: one JSON line per finished step, written through before the next.

    A line cut short by a kill is dropped when the log is opened again.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: dict[tuple[str, str], dict[str, Any]] = {}
        if path.exists():
            raw = path.read_bytes()
            end = raw.rfind(b"\n") + 1
            if end < len(raw):
                with open(path, "r+b") as file:
                    file.truncate(end)
            for line in raw[:end].splitlines():
                record = json.loads(line)
                self.done[(record["step"], record["key"])] = record
        self._file: Any = None

    def get(self, step: str, key: str) -> dict[str, Any] | None:
        return self.done.get((step, key))

    def write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        self.done[(record["step"], record["key"])] = record

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def select_questions(samples: Sequence[dict[str, Any]], limit: int | None) -> list[Question]:
    """The judged questions in file order; with ``limit``, the first ``limit``."""
    chosen: list[Question] = []
    for sample in samples:
        user_id = str(sample["sample_id"])
        for index, qa in enumerate(sample["qa"]):
            category = int(qa.get("category", 0))
            if category in QA_CATEGORIES and "answer" in qa:
                chosen.append(Question(f"{user_id}/{index}", user_id, str(qa["question"]),
                                       str(qa["answer"]), category))
    return chosen if limit is None else chosen[:limit]


def add_steps(sample: dict[str, Any], batch: int) -> list[AddStep]:
    """Each session's turns, ``batch`` at a time, as named user messages."""
    user_id = str(sample["sample_id"])
    by_session: dict[int, list[Any]] = {}
    for entry in entries(sample, "turns"):
        if entry.text.strip():
            by_session.setdefault(entry.session, []).append(entry)
    steps: list[AddStep] = []
    for session, turns in by_session.items():
        for start in range(0, len(turns), batch):
            group = turns[start:start + batch]
            messages = [_message(e.text, e.speaker) for e in group]
            steps.append(AddStep(f"{user_id}/s{session}/{start}", user_id, messages,
                                 group[0].timestamp))
    return steps


def _message(text: str, speaker: str | None) -> dict[str, str]:
    """A turn as a user message with its speaker as the name (the text without the prefix)."""
    if not speaker:
        return {"role": "user", "content": text}
    return {"role": "user", "name": speaker, "content": text.removeprefix(f"{speaker}: ")}


class LocomoQA:
    """One run in a folder: what it will do, what is left, and running it."""

    def __init__(self, data_path: str | Path, out: str | Path, settings: QASettings,
                 limit: int | None = None) -> None:
        if settings.batch < 1 or settings.top_k < 1:
            raise ValueError("batch and top_k must be at least 1")
        if settings.add_mode not in ("two_calls", "one_call"):
            raise ValueError(f"add_mode is two_calls or one_call, not {settings.add_mode!r}")
        if limit is not None and limit < 1:
            raise ValueError("limit must be at least 1")
        self.data_path = Path(data_path)
        self.out = Path(out)
        self.settings = settings
        samples = load_samples(self.data_path)
        self.questions = select_questions(samples, limit)
        wanted = {q.user_id for q in self.questions}
        self.conversations = [str(s["sample_id"]) for s in samples if str(s["sample_id"]) in wanted]
        self.adds = [step for s in samples if str(s["sample_id"]) in wanted
                     for step in add_steps(s, settings.batch)]
        self.header = {"data_sha256": _sha256(self.data_path), **asdict(settings),
                       "judge": settings.judge_model}
        self._check_header()
        self.log = RunLog(self.out / "log.jsonl")

    @property
    def memory_path(self) -> Path:
        """The SQLite file of the run's memory (when no store is configured)."""
        return self.out / "memory.db"

    def _check_header(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / "run.json"
        if path.exists():
            # a run started before add_mode was recorded added in two calls
            before = {"add_mode": "two_calls", **json.loads(path.read_text(encoding="utf-8"))}
            changed = sorted(k for k in self.header if before.get(k) != self.header[k])
            if changed:
                raise ValueError(
                    f"{self.out} holds a run with other settings ({', '.join(changed)} differ); "
                    "continue it with the same ones, or give another --out")
        else:
            path.write_text(json.dumps(self.header, indent=2) + "\n", encoding="utf-8")

    def pending(self) -> tuple[list[AddStep], list[Question], list[Question]]:
        """The adds, answers and verdicts not done yet."""
        return ([a for a in self.adds if not self.log.get("add", a.key)],
                [q for q in self.questions if not self.log.get("answer", q.key)],
                [q for q in self.questions if not self.log.get("judge", q.key)])

    def estimate(self) -> dict[str, Any]:
        """Calls and tokens left to spend (rough: text at 4 characters a token), priced with
        litellm's price list when it knows the models."""
        adds, answers, verdicts = self.pending()
        text = sum(len(m["content"]) + len(m.get("name", "")) for a in adds for m in a.messages) // 4
        memories = self.settings.top_k * _MEMORY_TOKENS
        calls_per_add = 1 if self.settings.add_mode == "one_call" else 2
        instructions = _ONE_CALL_PROMPT if calls_per_add == 1 else (
            _EXTRACTION_PROMPT + _DECISION_PROMPT)
        add_prompt = len(adds) * (instructions + 6 * _MEMORY_TOKENS) + calls_per_add * text
        answer_prompt = sum(_ANSWER_PROMPT + memories + len(q.question) // 4 for q in answers)
        judge_prompt = sum(_JUDGE_PROMPT + (len(q.question) + len(q.answer)) // 4 + 10
                           for q in verdicts)
        llm_prompt, llm_completion = add_prompt + answer_prompt, (
            len(adds) * _ADD_COMPLETION + len(answers) * _ANSWER_COMPLETION)
        judge_completion = len(verdicts) * _JUDGE_COMPLETION
        costs = [_price(self.settings.llm, llm_prompt, llm_completion),
                 _price(self.settings.judge_model, judge_prompt, judge_completion)]
        return {
            "adds": len(adds), "answers": len(answers), "verdicts": len(verdicts),
            "llm_calls": calls_per_add * len(adds) + len(answers) + len(verdicts),
            "prompt_tokens": llm_prompt + judge_prompt,
            "completion_tokens": llm_completion + judge_completion,
            "cost_usd": None if None in costs else sum(c for c in costs if c is not None),
            "done": {"adds": len(self.adds) - len(adds),
                     "answers": len(self.questions) - len(answers),
                     "verdicts": len(self.questions) - len(verdicts)},
        }

    def run(self, memory: Memory, answerer: LLM, judge: LLM,
            progress: Progress | None = None) -> dict[str, Any]:
        """Do what is left, then report on the whole run."""
        try:
            self._ingest(memory, progress)
            self._answer(memory, answerer, progress)
            self._judge(judge, progress)
            report = self.report(memory)
        finally:
            self.log.close()
        (self.out / "report.json").write_text(json.dumps(report, indent=2) + "\n",
                                              encoding="utf-8")
        return report

    def _ingest(self, memory: Memory, progress: Progress | None) -> None:
        adds = self.pending()[0]
        for done, step in enumerate(adds, start=1):
            if done == 1 and self._stored_before(memory, step):
                self.log.write({"step": "add", "key": step.key, "recovered": True})
                continue
            started = time.perf_counter()
            result = memory.add(step.messages, user_id=step.user_id, timestamp=step.timestamp,
                                metadata={"locomo_add": step.key})
            events: dict[str, int] = {}
            for event in result.results:
                events[event.event] = events.get(event.event, 0) + 1
            self.log.write({"step": "add", "key": step.key,
                            "seconds": time.perf_counter() - started, "events": events,
                            **result.usage.model_dump(), "errors": len(result.errors)})
            if progress:
                progress("add (infer=True)", done, len(adds))

    @staticmethod
    def _stored_before(memory: Memory, step: AddStep) -> bool:
        """Whether an add whose log line a kill cut off reached the store."""
        found = memory.get_all(user_id=step.user_id, filters={"locomo_add": step.key}, limit=1)
        return len(found) > 0

    def _answer(self, memory: Memory, answerer: LLM, progress: Progress | None) -> None:
        questions = self.pending()[1]
        for done, q in enumerate(questions, start=1):
            started = time.perf_counter()
            found = memory.search(q.question, user_id=q.user_id, limit=self.settings.top_k,
                                  rerank=self.settings.rerank)
            searched = time.perf_counter()
            shown = "\n".join(_line(item) for item in found.results)
            reply = answerer.complete(LLMRequest([
                {"role": "system", "content": ANSWER_SYSTEM},
                {"role": "user", "content": ANSWER_USER.format(memories=shown, question=q.question)},
            ], purpose="answer"))
            self.log.write({"step": "answer", "key": q.key, "answer": reply.text.strip(),
                            "memories": len(found.results), "search_seconds": searched - started,
                            "seconds": time.perf_counter() - searched, **_usage(reply)})
            if progress:
                progress("answer", done, len(questions))

    def _judge(self, judge: LLM, progress: Progress | None) -> None:
        questions = self.pending()[2]
        for done, q in enumerate(questions, start=1):
            answer = self._answer_of(q)
            started = time.perf_counter()
            reply = judge.complete(LLMRequest([
                {"role": "system", "content": JUDGE_SYSTEM},
                {"role": "user", "content": JUDGE_USER.format(
                    question=q.question, gold=q.answer, answer=answer)},
            ], json_schema=JUDGE_SCHEMA, schema_name="verdict", purpose="judge"))
            label = judge_label(reply.text)
            self.log.write({"step": "judge", "key": q.key, "correct": bool(label),
                            "readable": label is not None,
                            "seconds": time.perf_counter() - started, **_usage(reply)})
            if progress:
                progress("judge", done, len(questions))

    def _answer_of(self, q: Question) -> str:
        record = self.log.get("answer", q.key)
        assert record is not None
        return str(record["answer"])

    def report(self, memory: Memory) -> dict[str, Any]:
        """Judge score, F1 and BLEU-1 per category; tokens and latency; the memory's size."""
        per_category: dict[int, list[tuple[float, float, float]]] = {}
        answers, verdicts = [], []
        for q in self.questions:
            answer, verdict = self.log.get("answer", q.key), self.log.get("judge", q.key)
            if answer is None or verdict is None:
                continue
            answers.append(answer)
            verdicts.append(verdict)
            per_category.setdefault(q.category, []).append((
                100.0 * verdict["correct"], 100 * f1(answer["answer"], q.answer),
                100 * bleu1(answer["answer"], q.answer)))
        scored = [s for c in QA_CATEGORIES for s in per_category.get(c, [])]
        categories = {str(c): {"name": CATEGORIES[c], **_means(per_category[c])}
                      for c in QA_CATEGORIES if c in per_category}
        adds = [r for a in self.adds if (r := self.log.get("add", a.key)) is not None]
        return {
            "data": str(self.data_path), "settings": self.header,
            "conversations": self.conversations,
            "categories": categories, "overall": _means(scored),
            "unreadable_verdicts": sum(1 for v in verdicts if not v["readable"]),
            "add": _steps(adds, [r for r in adds if not r.get("recovered")]),
            "answer": _steps(answers, answers, extra=("search_seconds",)),
            "judge": _steps(verdicts, verdicts),
            "memory": _size(memory, self.conversations, adds),
        }


def _line(item: MemoryItem) -> str:
    when = item.valid_from or item.created_at
    return f"- {when:%Y-%m-%d %H:%M}: {item.memory}"


def _usage(reply: LLMResponse) -> dict[str, Any]:
    return {"llm_calls": reply.usage.llm_calls, "prompt_tokens": reply.usage.prompt_tokens,
            "completion_tokens": reply.usage.completion_tokens, "cost_usd": reply.usage.cost_usd}


def _means(rows: Sequence[tuple[float, float, float]]) -> dict[str, Any]:
    n = len(rows) or 1
    return {"questions": len(rows), "judge": sum(r[0] for r in rows) / n,
            "f1": sum(r[1] for r in rows) / n, "bleu1": sum(r[2] for r in rows) / n}


def _steps(records: Sequence[dict[str, Any]], measured: Sequence[dict[str, Any]],
           extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """Counts and per-step means of tokens, with the latency's median and mean."""
    n = len(measured) or 1
    total = {k: sum(int(r.get(k, 0)) for r in measured)
             for k in ("llm_calls", "prompt_tokens", "completion_tokens")}
    costs = [r.get("cost_usd") for r in measured]
    out: dict[str, Any] = {
        "count": len(records), "measured": len(measured), **total,
        "per_step": {k: v / n for k, v in total.items()},
        "cost_usd": None if not costs or None in costs else sum(c for c in costs if c),
    }
    for key in ("seconds", *extra):
        values = [float(r[key]) for r in measured if key in r]
        out[key] = {"p50": statistics.median(values) if values else 0.0,
                    "mean": statistics.fmean(values) if values else 0.0}
    if any("events" in r for r in measured):
        events: dict[str, int] = {}
        for r in measured:
            for name, count in r.get("events", {}).items():
                events[name] = events.get(name, 0) + count
        out["events"] = events
        out["errors"] = sum(int(r.get("errors", 0)) for r in measured)
    return out


def _size(memory: Memory, conversations: Sequence[str], adds: Sequence[dict[str, Any]]) -> dict[
    str, Any
]:
    per: dict[str, dict[str, int]] = {}
    for user_id in conversations:
        count = memory.stats(user_id=user_id).memories
        items = memory.get_all(user_id=user_id, limit=max(1, count)).results
        per[user_id] = {"memories": count, "characters": sum(len(i.memory) for i in items)}
    return {"memories": sum(p["memories"] for p in per.values()),
            "characters": sum(p["characters"] for p in per.values()),
            "adds": len(adds), "conversations": per}


def _price(model: str, prompt: int, completion: int) -> float | None:
    """What litellm's price list says these tokens cost (None: a model it does not price)."""
    from memkit._imports import import_litellm

    try:
        info = import_litellm().get_model_info(model)
        return float(prompt * (info.get("input_cost_per_token") or 0.0)
                     + completion * (info.get("output_cost_per_token") or 0.0)) if (
            info.get("input_cost_per_token") is not None) else None
    except Exception:  # litellm raises on a model it does not know
        return None


def format_estimate(estimate: dict[str, Any]) -> str:
    done = estimate["done"]
    cost = estimate["cost_usd"]
    price = "unknown (litellm has no price for the model)" if cost is None else f"about ${cost:.2f}"
    left = (f"{estimate['adds']} adds, {estimate['answers']} answers, "
            f"{estimate['verdicts']} verdicts")
    return (f"to do: {left}; {estimate['llm_calls']} LLM calls, about "
            f"{estimate['prompt_tokens']:,} prompt and {estimate['completion_tokens']:,} "
            f"completion tokens; cost {price}"
            + (f"\nalready done: {done['adds']} adds, {done['answers']} answers, "
               f"{done['verdicts']} verdicts" if any(done.values()) else ""))


def format_qa_report(report: dict[str, Any]) -> str:
    """The scores by category, then tokens and latency per step and the memory's size."""
    settings = report["settings"]
    lines = [f"LoCoMo QA: {len(report['conversations'])} conversations, {report['data']}; "
             f"llm {settings['llm']}, judge {settings['judge']}, {settings['batch']} turns an "
             f"add in {settings.get('add_mode', 'two_calls').replace('_', ' ')}, "
             f"top {settings['top_k']} memories",
             "", f"{'category':<16}{'n':>5}  {'judge':>6}  {'F1':>6}  {'BLEU-1':>6}"]
    rows = [(f"{c} {v['name']}", v) for c, v in report["categories"].items()]
    for name, v in [*rows, ("overall", report["overall"])]:
        lines.append(f"{name:<16}{v['questions']:>5}  {v['judge']:6.1f}  {v['f1']:6.1f}  "
                     f"{v['bleu1']:6.1f}")
    if report["unreadable_verdicts"]:
        lines.append(f"({report['unreadable_verdicts']} verdicts unreadable, counted WRONG)")
    lines.append("")
    for name in ("add", "answer", "judge"):
        s = report[name]
        per = s["per_step"]
        lines.append(f"{name:<7}{s['count']:>6} x  {per['prompt_tokens']:8.0f} prompt + "
                     f"{per['completion_tokens']:5.0f} completion tokens, "
                     f"{per['llm_calls']:.2f} calls; {s['seconds']['p50']:.2f} s p50"
                     + (f", search {1000 * s['search_seconds']['p50']:.1f} ms p50"
                        if "search_seconds" in s else ""))
    size = report["memory"]
    events = report["add"].get("events", {})
    lines.append(f"memory: {size['memories']} memories, {size['characters']:,} characters "
                 f"after {size['adds']} adds ({', '.join(f'{k} {v}' for k, v in events.items())})")
    return "\n".join(lines)
