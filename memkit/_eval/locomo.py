"""Retrieval quality on LoCoMo, offline: no LLM, only memkit's public API.

Each conversation becomes one scope (``user_id`` = its ``sample_id``). In
``turns`` mode each session is one ``add(..., infer=False)`` of its turns, as
``"<speaker>: <text>"`` (plus ``" and shared <caption>"`` for an image) with the
speaker as the message's name and the session date as the timestamp; in
``observations`` mode each session's observation facts are stored instead, in
the order of the turns they summarise, each with the speaker it is about (the
data groups them by speaker) as the message's name.
The evaluator keeps which evidence ids each stored memory covers. Every
question is then searched in its scope and scored on those ids.

    >>> report = run_locomo("locomo10.json", mode="turns", search="hybrid")
    >>> print(format_report(report))

The numbers are deterministic: the same data and configuration give the same
figures, run after run.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from memkit._eval.crossval import GRID, cross_validate, format_cross_validation
from memkit.embeddings.base import Embedder, Matrix

if TYPE_CHECKING:
    from memkit._memory import Memory
    from memkit._models import MemoryItem

Mode = Literal["turns", "observations"]
SearchMode = Literal["keyword", "vector", "hybrid"]
Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``, called as ingestion and questions advance."""

KS = (1, 5, 10, 25, 50)
CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain", 5: "adversarial"}
MACRO_CATEGORIES = (1, 2, 3, 4)
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SESSION = re.compile(r"session_(\d+)")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y")


def default_data_path() -> Path:
    """The development split beside a source checkout (``../shared/data/locomo/``);
    an installed memkit has none, so the caller must name the file."""
    checkout = Path(__file__).resolve().parents[2]
    path = checkout.parent / "shared/data/locomo/locomo10-dev.json"
    if not (checkout / "pyproject.toml").is_file() or not path.is_file():
        raise ValueError("no LoCoMo file given: pass --data PATH to a LoCoMo JSON file "
                         "(e.g. locomo10.json from the LoCoMo dataset's release)")
    return path


def load_samples(path: str | Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as file:
        data = json.load(file)
    if isinstance(data, dict):  # a single sample
        data = [data]
    if not isinstance(data, list) or not all(isinstance(s, dict) and "qa" in s for s in data):
        raise ValueError(f"{path}: not a LoCoMo file (a list of samples with 'qa')")
    return data


def normalise_evidence(raw: object) -> list[str]:
    """Evidence ids as ``D<session>:<turn>``; "D8:6; D9:17", "D:11:26", "D30:05" included."""
    items = raw if isinstance(raw, list) else [raw]
    ids: list[str] = []
    for item in items:
        for session, turn in _EVIDENCE.findall(str(item)):
            normalised = f"D{int(session)}:{int(turn)}"
            if normalised not in ids:
                ids.append(normalised)
    return ids


def session_date(text: str | None) -> datetime | None:
    if not text:
        return None
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


@dataclass(frozen=True, slots=True)
class Entry:
    """One memory to store: its text, evidence ids, session, timestamp and speaker."""

    text: str
    dia_ids: tuple[str, ...]
    session: int
    timestamp: datetime | None
    speaker: str | None = None


def sessions(conversation: dict[str, Any]) -> list[int]:
    """Session numbers in order. Only ``session_N`` keys count (some samples list extra dates)."""
    found = (_SESSION.fullmatch(key) for key in conversation)
    return sorted(int(m[1]) for m in found if m and isinstance(conversation[m[0]], list))


def entries(sample: dict[str, Any], mode: Mode) -> list[Entry]:
    conversation = sample["conversation"]
    out: list[Entry] = []
    for n in sessions(conversation):
        start = session_date(conversation.get(f"session_{n}_date_time"))
        if mode == "turns":
            for index, turn in enumerate(conversation[f"session_{n}"]):
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" and shared {turn['blip_caption']}"
                out.append(Entry(text, tuple(normalise_evidence(turn.get("dia_id"))), n,
                                 _offset(start, index), str(turn["speaker"])))
        else:
            observed = (sample.get("observation") or {}).get(f"session_{n}_observation") or {}
            facts = [(str(text), tuple(normalise_evidence(evidence)), str(subject))
                     for subject, listed in observed.items()
                     for text, evidence in map(_fact, listed)]
            facts.sort(key=lambda fact: _turn_order(fact[1]))  # stable: ties keep the data's order
            out += [Entry(text, ids, n, _offset(start, index), subject)
                    for index, (text, ids, subject) in enumerate(facts)]
    return out


def _fact(fact: object) -> tuple[object, object]:
    """An observation's text and evidence (``[text, evidence]``, or a bare text)."""
    return (fact[0], fact[1]) if isinstance(fact, list) else (fact, [])


def _turn_order(ids: Sequence[str]) -> tuple[int, int]:
    """Where an observation's first evidence turn is in the conversation (none: last)."""
    match = _EVIDENCE.fullmatch(str(ids[0])) if ids else None
    return (int(match[1]), int(match[2])) if match else (1 << 30, 0)


def _offset(start: datetime | None, index: int) -> datetime | None:
    # One second per item keeps the order of a session's memories.
    return None if start is None else start + timedelta(seconds=index)


Evidence = dict[str, list[str]]
"""Memory id -> the evidence ids it covers, kept by the evaluator (not in the memory)."""


def ingest(memory: Memory, sample: dict[str, Any], mode: Mode, evidence: Evidence,
           dialogue: bool = True) -> int:
    """Store one conversation in its own scope; returns how many memories it holds.

    With ``dialogue`` each session is one ``add`` of its turns, each with its
    speaker's name (so memkit indexes each turn with its neighbours); otherwise
    every item is its own ``add``. A text stored twice is one memory covering
    the evidence of both.
    """
    user_id = str(sample["sample_id"])
    stored: set[str] = set()
    groups: dict[tuple[int, int], list[Entry]] = {}
    for index, entry in enumerate(e for e in entries(sample, mode) if e.text.strip()):
        key = (entry.session, 0) if dialogue else (entry.session, index)
        groups.setdefault(key, []).append(entry)
    for group in groups.values():
        messages = [{"role": "user", "content": e.text, **({"name": e.speaker} if e.speaker else {})}
                    for e in group]
        result = memory.add(messages, user_id=user_id, infer=False, timestamp=group[0].timestamp,
                            metadata={"session": group[0].session})
        ids = {event.memory: event.id for event in result.results}
        for entry in group:
            memory_id = ids[entry.text]
            stored.add(memory_id)
            covered = evidence.setdefault(memory_id, [])
            covered.extend(d for d in entry.dia_ids if d not in covered)
    return len(stored)


@dataclass(slots=True)
class _Tally:
    questions: int = 0
    recall: dict[int, float] = field(default_factory=lambda: dict.fromkeys(KS, 0.0))
    hit: dict[int, float] = field(default_factory=lambda: dict.fromkeys(KS, 0.0))
    rr: float = 0.0

    def add(self, recall: dict[int, float], hit: dict[int, float], rr: float) -> None:
        self.questions += 1
        for k in KS:
            self.recall[k] += recall[k]
            self.hit[k] += hit[k]
        self.rr += rr

    def summary(self) -> dict[str, Any]:
        n = self.questions or 1
        return {
            "questions": self.questions,
            "recall": {str(k): 100 * v / n for k, v in self.recall.items()},
            "hit": {str(k): 100 * v / n for k, v in self.hit.items()},
            "mrr": self.rr / n,
        }


def score(evidence: Sequence[str], ranked: Sequence[Sequence[str]]) -> tuple[
    dict[int, float], dict[int, float], float
]:
    """Recall@k, hit@k and reciprocal rank of one question, from the ranked memories' ids."""
    wanted = set(evidence)
    covered: set[str] = set()
    recall: dict[int, float] = {}
    hit: dict[int, float] = {}
    first: int | None = None
    for rank, ids in enumerate(ranked[: max(KS)], start=1):
        covered.update(ids)
        if first is None and wanted.intersection(ids):
            first = rank
        if rank in KS:
            recall[rank] = len(wanted & covered) / len(wanted)
            hit[rank] = 1.0 if wanted & covered else 0.0
    for k in KS:  # fewer results than k
        if k not in recall:
            recall[k] = len(wanted & covered) / len(wanted)
            hit[k] = 1.0 if wanted & covered else 0.0
    return recall, hit, (1.0 / first if first else 0.0)


def _questions(samples: Sequence[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for sample in samples:
        for qa in sample["qa"]:
            yield str(sample["sample_id"]), qa


def evaluate(
    memory: Memory, samples: Sequence[dict[str, Any]], search: SearchMode,
    evidence_of: Evidence, progress: Progress | None = None,
) -> dict[str, Any]:
    """Search every question in its scope and score the top 50 against its evidence."""
    per_category: dict[int, _Tally] = {}
    per_conversation: dict[str, _Tally] = {}
    paper = _Tally()
    without_evidence = 0
    total = sum(len(s["qa"]) for s in samples)
    started = time.perf_counter()
    for done, (user_id, qa) in enumerate(_questions(samples), start=1):
        category = int(qa.get("category", 0))
        evidence = normalise_evidence(qa.get("evidence") or [])
        conversation = per_conversation.setdefault(user_id, _Tally())
        if not evidence:  # the paper counts these as found
            without_evidence += 1
            ones = dict.fromkeys(KS, 1.0)
            paper.add(ones, ones, 1.0)
            conversation.add(ones, ones, 1.0)
        else:
            hits = memory.search(str(qa["question"]), user_id=user_id, limit=max(KS), mode=search)
            # Ties are ordered by the memories' first evidence id so that runs agree.
            covered = [evidence_of.get(item.id, []) for item in hits.results]
            ranked = sorted(zip(hits.results, covered, strict=True), key=_rank_key)
            ids = [dia_ids for _, dia_ids in ranked]
            recall, hit, rr = score(evidence, ids)
            per_category.setdefault(category, _Tally()).add(recall, hit, rr)
            paper.add(recall, hit, rr)
            conversation.add(recall, hit, rr)
        if progress:
            progress(f"questions ({search})", done, total)
    order = [c for c in CATEGORIES if c in per_category]
    order += sorted(set(per_category) - set(CATEGORIES))
    categories = {
        str(c): {"name": CATEGORIES.get(c, str(c)), **per_category[c].summary()} for c in order
    }
    macro_cats = [per_category[c].summary() for c in MACRO_CATEGORIES if c in per_category]
    macro: dict[str, Any] = {
        metric: {str(k): sum(s[metric][str(k)] for s in macro_cats) / max(1, len(macro_cats))
                 for k in KS}
        for metric in ("recall", "hit")
    }
    macro["mrr"] = sum(s["mrr"] for s in macro_cats) / max(1, len(macro_cats))
    return {
        "search": search,
        "categories": categories,
        "macro_1_4": macro,
        "paper_overall": paper.summary(),
        "conversations": {c: t.summary() for c, t in per_conversation.items()},
        "questions": total,
        "questions_without_evidence": without_evidence,
        "search_seconds": time.perf_counter() - started,
    }


def _rank_key(pair: tuple[MemoryItem, list[str]]) -> tuple[float, int, int, str]:
    """Best first; equal scores by first evidence id, then text, never by random ids."""
    item, ids = pair
    return (-round(item.score or 0.0, 9), *_turn_order(ids), item.memory)


def default_memory(embedder: str = "local") -> Memory:
    """memkit's defaults (SQLite store, by default the local embedder) in a throwaway
    in-RAM database; ``embedder``: the embedder provider (``"e5"``: the stronger one)."""
    from memkit._memory import Memory

    store = {"provider": "sqlite", "config": {"path": ":memory:"}}
    return Memory.from_config({"vector_store": store, "embedder": {"provider": embedder}})


class _TimedEmbedder(Embedder):
    """Counts the seconds spent embedding, to split a stage's time into its parts."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.dimension = inner.dimension
        self.model_name = inner.model_name
        self.seconds = 0.0

    def embed(self, texts: Sequence[str]) -> Matrix:
        return self._timed(self.inner.embed, texts)

    def embed_query(self, texts: Sequence[str]) -> Matrix:
        return self._timed(self.inner.embed_query, texts)

    def _timed(self, embed: Callable[[Sequence[str]], Matrix], texts: Sequence[str]) -> Matrix:
        started = time.perf_counter()
        try:
            return embed(texts)
        finally:
            self.seconds += time.perf_counter() - started


def _view(base: Memory, embedder: Embedder, search: dict[str, Any] | None = None) -> Memory:
    """A memory over ``base``'s components (not to be closed), optionally searching otherwise."""
    from memkit._config import SearchConfig
    from memkit._memory import Memory

    config = base.config
    if search is not None:
        config = config.model_copy(update={"search": SearchConfig.model_validate(search)})
    return Memory(config, llm=base.llm, embedder=embedder, vector_store=base.vector_store,
                  history=base.history_store)


def run_locomo(
    data_path: str | Path | None = None,
    *,
    mode: Mode = "turns",
    search: SearchMode | Sequence[SearchMode] = "hybrid",
    memory_factory: Callable[[], Memory] | None = None,
    progress: Progress | None = None,
    cross_validation: bool = False,
    dialogue: bool = True,
    embedder: str = "local",
) -> dict[str, Any]:
    """Ingest a LoCoMo file with ``mode`` and evaluate ``search`` (one mode or several).

    With several search modes the memories are stored once and every mode is
    evaluated on them; the result holds one entry per mode under ``runs``, each
    with its timings split into query embedding and the rest (store and fusion).
    ``cross_validation`` also chooses the hybrid fusion settings by leaving one
    conversation out at a time (:mod:`memkit._eval.crossval`). ``dialogue=False``
    stores turn by turn, without the neighbouring turns' context. ``embedder`` names the
    embedder provider of the default memory (without ``memory_factory``).
    """
    path = Path(data_path) if data_path is not None else default_data_path()
    samples = load_samples(path)
    searches: list[SearchMode] = [search] if isinstance(search, str) else list(search)
    base = memory_factory() if memory_factory else default_memory(embedder)
    timed = _TimedEmbedder(base.embedder)
    memory = _view(base, timed)
    try:
        started = time.perf_counter()
        stored = 0
        evidence: Evidence = {}
        for done, sample in enumerate(samples, start=1):
            stored += ingest(memory, sample, mode, evidence, dialogue)
            if progress:
                progress(f"ingest ({mode})", done, len(samples))
        ingest_seconds = time.perf_counter() - started
        ingest_embedding = timed.seconds
        runs = {}
        for s in searches:
            timed.seconds = 0.0
            runs[s] = evaluate(memory, samples, s, evidence, progress)
            runs[s]["query_embedding_seconds"] = timed.seconds
        tuned = None
        if cross_validation:
            tuned = cross_validate(
                lambda config: _view(base, timed, config),
                lambda view: evaluate(view, samples, "hybrid", evidence, progress), GRID,
            )
    finally:
        base.close()
    return {
        "data": str(path),
        "conversations": [str(s["sample_id"]) for s in samples],
        "mode": mode,
        "dialogue": dialogue,
        "embedder": base.embedder.model_name,
        "memories": stored,
        "ingest_seconds": ingest_seconds,
        "ingest_embedding_seconds": ingest_embedding,
        "runs": runs,
        **({"cross_validation": tuned} if tuned is not None else {}),
    }


def format_report(report: dict[str, Any]) -> str:
    """A plain-text table per search mode: recall@k, hit@k and MRR by category."""
    lines = [f"LoCoMo {report['mode']}: {len(report['conversations'])} conversations, "
             f"{report['memories']} memories, {report['data']}, embedder "
             f"{report.get('embedder', '?')}",
             f"ingest {report['ingest_seconds']:.1f} s (embedding "
             f"{report['ingest_embedding_seconds']:.1f} s, the rest store writes)"]
    header = "  ".join(f"R@{k:<3}" for k in KS) + "  " + "  ".join(f"H@{k:<3}" for k in KS)
    for search, run in report["runs"].items():
        lines.append("")
        searched = run["questions"] - run["questions_without_evidence"]
        per_query = 1000 * run["search_seconds"] / max(1, searched)
        embedding = 1000 * run.get("query_embedding_seconds", 0.0) / max(1, searched)
        lines.append(f"[{report['mode']} / {search}]  {run['questions']} questions, "
                     f"{run['questions_without_evidence']} without evidence; "
                     f"{per_query:.1f} ms a search ({embedding:.1f} ms query embedding, "
                     f"{per_query - embedding:.1f} ms store and fusion)")
        lines.append(f"{'category':<22}{'n':>5}  {header}  {'MRR':>5}")
        rows = [(f"{c} {v['name']}", v) for c, v in run["categories"].items()]
        rows.append(("macro 1-4", {**run["macro_1_4"], "questions": ""}))
        rows.append(("paper-style overall", run["paper_overall"]))
        for name, v in rows:
            recall = "  ".join(f"{v['recall'][str(k)]:5.1f}" for k in KS)
            hit = "  ".join(f"{v['hit'][str(k)]:5.1f}" for k in KS)
            lines.append(f"{name:<22}{v['questions']!s:>5}  {recall}  {hit}  {v['mrr']:5.3f}")
    if "cross_validation" in report:
        lines += ["", format_cross_validation(report["cross_validation"])]
    return "\n".join(lines)
