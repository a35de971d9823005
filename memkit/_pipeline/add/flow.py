"""The add pipeline: extract -> embed -> search existing -> decide -> validate -> apply."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import numpy as np

from memkit._errors import EmbeddingError, LLMError
from memkit._filters import Filter, all_of
from memkit._models import AddResult, HistoryRecord, MemoryEvent, OperationError, Usage
from memkit._pipeline.add import prompts
from memkit._pipeline.add.context import (
    PREVIOUS_TURN,
    is_dialogue,
    with_neighbours,
    with_previous,
)
from memkit._pipeline.add.parsing import (
    Decision,
    Fact,
    ParseError,
    Triple,
    parse_decisions,
    parse_extraction,
    parse_fact_items,
    parse_operations,
)
from memkit._pipeline.effects import Complete, Embed, Flow, Search, ask
from memkit._pipeline.features.entities import named_entities
from memkit._pipeline.features.graph import (
    GraphOutcome,
    GraphPlan,
    GraphSettings,
    embed_names,
    entity_model,
    plan_graph,
    relation_model,
)
from memkit._pipeline.features.graph_writes import apply_with_graph
from memkit._pipeline.features.task_fields import with_task_status
from memkit._pipeline.inputs import Scope, text_hash
from memkit._pipeline.write.apply import apply, duplicates
from memkit._pipeline.write.versions import end, revise, valid_at
from memkit._time import to_datetime
from memkit.graph.base import GraphScope
from memkit.llms.base import LLMRequest, Message
from memkit.stores.base import Record, Vector, WriteBatch

T = TypeVar("T")
OnError = Literal["raise", "degrade"]
SUBJECT = "subject"
"""The metadata key of who or what an extracted fact is about ("user", "Alice")."""
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class AddRequest:
    messages: list[Message]
    scope: Scope
    metadata: dict[str, Any]
    filters: Filter | None
    prompt: str | None
    infer: bool
    timestamp: str
    extraction_prompt: str | None = None
    decision_prompt: str | None = None
    candidates_per_fact: int = 5
    on_error: OnError = "raise"
    expires_at: str | None = None
    dry_run: bool = False
    #: the caller's ``memory_type`` and ``importance``, over what extraction says
    lifecycle: dict[str, Any] = field(default_factory=dict)
    #: with a graph store: relations come with the facts and are written with the memories
    graph: GraphSettings | None = None
    #: the entities (names or ids) the memories are about (``entities=``; needs ``graph``)
    entities: tuple[str, ...] = ()
    #: cosine similarity from which a new memory is a near-duplicate (off when None)
    dedup_threshold: float | None = None
    #: ``add_mode="one_call"``: extraction and decisions in one LLM answer
    one_call: bool = False

    def batch(self) -> WriteBatch:
        """The empty batch this add fills: deduplicated within its scope, as of its time;
        an inferred fact that turns out a duplicate confirms the memory it re-states."""
        return WriteBatch(dedup_scope=self.scope.filter(), valid_at=self.timestamp,
                          near=self.dedup_threshold, confirm_duplicates=self.infer)

    @property
    def graph_scope(self) -> GraphScope:
        return GraphScope(self.scope.user_id, self.scope.agent_id, self.scope.run_id)


def _named(req: AddRequest) -> Flow[GraphPlan | None]:
    """The graph plan of the entities the caller named (checked before anything is spent)."""
    if not req.entities or req.graph is None:
        return None
    names = yield from named_entities(req.graph_scope, req.entities)
    return GraphPlan(req.graph_scope, req.timestamp, req.graph, named=names)


@dataclass(slots=True)
class _Plan:
    """What validation kept: the batch to apply and the events it stands for."""

    request: AddRequest
    batch: WriteBatch
    events: list[MemoryEvent] = field(default_factory=list)
    errors: list[OperationError] = field(default_factory=list)
    #: updated memories whose past versions still need the old text's vector
    revised: list[tuple[Record, Record]] = field(default_factory=list)
    #: type and importance per extracted fact's text
    kinds: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: who or what each extracted fact is about, by its text
    subjects: dict[str, str] = field(default_factory=dict)

    def lifecycle(self, text: str) -> dict[str, Any]:
        """The type and importance a memory of ``text`` gets: the caller's, else the fact's."""
        return {**self.kinds.get(text, {}), **self.request.lifecycle}

    def metadata(self, text: str, base: dict[str, Any]) -> dict[str, Any]:
        """``base`` and the caller's metadata, with the subject the extraction gave ``text``
        (the caller's ``subject`` wins)."""
        subject = self.subjects.get(text)
        return {**base, **({SUBJECT: subject} if subject else {}), **self.request.metadata}

    def history(self, record: Record, event: str, old: str | None, new: str | None,
                role: str | None = None, actor: str | None = None) -> None:
        self.batch.history.append(HistoryRecord(
            id=str(uuid.uuid4()), memory_id=record.id, event=event,  # type: ignore[arg-type]
            old_value=old, new_value=new, timestamp=to_datetime(self.request.timestamp),
            is_deleted=event == "DELETE", user_id=record.user_id, agent_id=record.agent_id,
            run_id=record.run_id, actor_id=actor, role=role,
        ))

    def add(self, text: str, vector: Vector | None, metadata: dict[str, Any],
            role: str | None = None, actor: str | None = None) -> str:
        """Plan the memory's ADD; returns its id."""
        req = self.request
        metadata = with_task_status(metadata, self.lifecycle(text).get("memory_type"))
        record = Record(
            id=str(uuid.uuid4()), memory=text, hash=text_hash(text),
            created_at=req.timestamp, updated_at=req.timestamp,
            user_id=req.scope.user_id, agent_id=req.scope.agent_id, run_id=req.scope.run_id,
            metadata=metadata, vector=vector, valid_from=req.timestamp, expires_at=req.expires_at,
            **{"confidence": 1.0, **self.lifecycle(text)},
        )
        self.batch.adds.append(record)
        self.events.append(record.to_event("ADD", new=text))
        self.history(record, "ADD", None, text, role, actor)
        return record.id

    def none(self, record: Record, restated: bool = False) -> None:
        """Nothing to do for ``record``; ``restated``: a fact said it again (a confirmation)."""
        self.events.append(record.to_event("NONE"))
        if restated and all(r.id != record.id for r in self.batch.confirms):
            self.batch.confirms.append(record)

    def reject(self, message: str, operation: dict[str, Any]) -> None:
        self.errors.append(OperationError(stage="validation", message=message[:500],
                                          operation=operation))


def add_flow(req: AddRequest) -> Flow[AddResult]:
    named = yield from _named(req)
    if not req.infer:
        return (yield from _add_verbatim(req, named))
    errors: list[OperationError] = []
    conversation = [m for m in req.messages if m["role"] != "system" and m["content"].strip()]
    if not conversation:
        return AddResult()
    today = to_datetime(req.timestamp).date().isoformat()
    if req.one_call:
        return (yield from _add_in_one_call(req, conversation, today, named, errors))
    usage = Usage()
    custom = req.prompt if req.prompt is not None else req.extraction_prompt
    graph: GraphPlan | None = None
    items: list[Fact]
    if req.graph is not None:
        extraction = LLMRequest(prompts.extraction_messages(conversation, today, custom, True),
                                prompts.FACTS_AND_RELATIONS_SCHEMA, "facts", "extraction")
        extracted, usage = yield from _ask(req, extraction, parse_extraction, usage, errors,
                                           "extraction")
        items, triples = extracted or ([], [])
        graph = _graph_plan(req, triples, named, errors)
    else:
        extraction = LLMRequest(prompts.extraction_messages(conversation, today, custom),
                                prompts.FACTS_SCHEMA, "facts", "extraction")
        found, usage = yield from _ask(req, extraction, parse_fact_items, usage, errors,
                                       "extraction")
        items = found or []
    if not items:
        return AddResult(usage=usage, errors=errors)
    plan = _plan(req, items, errors)
    facts = [item.text for item in items]

    embedded = yield from _embed(req, facts, errors)
    facts = [f for f, v in zip(facts, embedded, strict=True) if v is not None]
    vectors = [v for v in embedded if v is not None]
    if not facts:
        return AddResult(usage=usage, errors=errors)
    existing = yield from _candidates(req, vectors)
    known = {r.hash: r for r in existing}
    pending: list[str] = []
    vector_of: dict[str, Vector] = {}
    for fact, vector in zip(facts, vectors, strict=True):
        if text_hash(fact) in known:
            plan.none(known[text_hash(fact)], restated=True)
        else:
            pending.append(fact)
            vector_of[fact] = vector

    decisions: Sequence[Decision | dict[str, Any]] | None
    if not pending:
        decisions = []
    elif not existing:  # nothing to compare with: every new fact is an ADD
        decisions = [Decision(event="ADD", text=fact) for fact in pending]
    else:
        decision = LLMRequest(
            prompts.decision_messages([r.memory for r in existing], pending, req.decision_prompt),
            prompts.DECISIONS_SCHEMA, "operations", "decision",
        )
        decisions, usage = yield from _ask(req, decision, parse_decisions, usage, errors,
                                           "decision")
        if decisions is None:
            return AddResult(results=plan.events, usage=usage, errors=errors)

    return (yield from _carry_out(plan, decisions, existing, vector_of, graph, usage))


def _add_in_one_call(req: AddRequest, conversation: list[Message], today: str,
                     named: GraphPlan | None, errors: list[OperationError]) -> Flow[AddResult]:
    """``add_mode="one_call"``: the memories the conversation's own messages find are shown,
    labelled, beside the conversation, and one answer extracts and decides at once."""
    embedded = yield from _embed(req, [m["content"] for m in conversation], errors)
    existing = yield from _candidates(req, [v for v in embedded if v is not None])
    graph = req.graph is not None
    request = LLMRequest(
        prompts.one_call_messages([r.memory for r in existing], conversation, today, graph),
        prompts.one_call_schema(graph), "operations", "add")
    answer, usage = yield from _ask(req, request, parse_operations, Usage(), errors,
                                    "extraction")
    if answer is None:
        return AddResult(usage=usage, errors=errors)
    decisions, items, triples = answer
    plan = _plan(req, items, errors)
    return (yield from _carry_out(plan, decisions, existing, {},
                                  _graph_plan(req, triples, named, errors) if graph else None,
                                  usage))


def _plan(req: AddRequest, items: list[Fact], errors: list[OperationError]) -> _Plan:
    """The empty plan of an add, with each fact's type, importance and subject."""
    return _Plan(req, req.batch(), errors=errors, kinds=_kinds(items, errors),
                 subjects={item.text: item.subject for item in items if item.subject})


def _graph_plan(req: AddRequest, triples: list[Triple | dict[str, Any]], named: GraphPlan | None,
                errors: list[OperationError]) -> GraphPlan:
    """The graph writes of the relations the answer stated and of the entities the caller
    named."""
    assert req.graph is not None
    graph = plan_graph(req.graph_scope, req.timestamp, req.graph, triples, errors)
    graph.named = [] if named is None else named.named
    return graph


def _candidates(req: AddRequest, vectors: Sequence[Vector]) -> Flow[list[Record]]:
    """The union of each vector's nearest memories in the scope (and ``filters``), valid now:
    what the LLM is shown, and may change."""
    where = all_of(req.scope.filter(), req.filters, valid_at(req.timestamp))
    shown: dict[str, Record] = {}
    for vector in vectors:
        for hit in (yield from ask(Search(vector, req.candidates_per_fact, where))):
            shown.setdefault(hit.record.id, hit.record)
    return list(shown.values())


def _carry_out(plan: _Plan, decisions: Sequence[Decision | dict[str, Any]],
               existing: list[Record], vector_of: dict[str, Vector], graph: GraphPlan | None,
               usage: Usage) -> Flow[AddResult]:
    """Validate the operations, embed the texts that have no vector yet, apply."""
    req, errors = plan.request, plan.errors
    _validate(plan, decisions, existing, vector_of)
    missing = [r for r in [*plan.batch.adds, *plan.batch.updates] if r.vector is None]
    if missing and not req.dry_run:
        rows = yield from _embed(req, [r.memory for r in missing], errors)
        for record, row in zip(missing, rows, strict=True):
            record.vector = row
        if any(row is None for row in rows):
            _drop_unembedded(plan)
    if plan.revised and not req.dry_run:  # a past version keeps the vector of its text
        rows = yield from _embed(req, [old.memory for old, _ in plan.revised], errors)
        for (_, past), row in zip(plan.revised, rows, strict=True):
            past.vector = row
        if any(row is None for row in rows):
            _drop_unembedded(plan)
    if not req.dry_run:
        yield from embed_names(graph)
    results, outcome = yield from _apply(plan, graph)
    return AddResult(results=results, usage=usage, errors=[*errors, *outcome.errors],
                     relations=[relation_model(r) for r in outcome.added],
                     closed_relations=[relation_model(r) for r in outcome.closed],
                     entities=[entity_model(e) for e in outcome.created])


def _kinds(facts: list[Fact], errors: list[OperationError]) -> dict[str, dict[str, Any]]:
    """Each fact's type and importance; rejected ones are reported (the fact is kept)."""
    kinds: dict[str, dict[str, Any]] = {}
    for fact in facts:
        for problem in fact.problems:
            errors.append(OperationError(stage="validation", message=(
                f"extraction gave a bad attribute ({problem}); the fact is kept without it")[:500],
                operation={"text": fact.text}))
        given = {"memory_type": fact.memory_type, "importance": fact.importance}
        kinds[fact.text] = {k: v for k, v in given.items() if v is not None}
    return kinds


def _ask(
    req: AddRequest,
    request: LLMRequest,
    parse: Callable[[str], T],
    usage: Usage,
    errors: list[OperationError],
    stage: str,
) -> Flow[tuple[T | None, Usage]]:
    """Complete and parse; on a malformed answer, one repair attempt, then report it.

    With ``on_error="degrade"`` a failed LLM call is reported too, instead of raised."""
    try:
        response = yield from ask(Complete(request))
    except LLMError as exc:
        _degraded(req, exc, errors, stage)
        return None, usage
    usage = usage.plus(response.usage)
    try:
        return parse(response.text), usage
    except ParseError as exc:
        problem = str(exc)
    repair = LLMRequest(prompts.repair_messages(request.messages, response.text, problem),
                        request.json_schema, request.schema_name, "repair")
    try:
        response = yield from ask(Complete(repair))
    except LLMError as exc:
        _degraded(req, exc, errors, stage)
        return None, usage
    usage = usage.plus(response.usage)
    try:
        return parse(response.text), usage
    except ParseError as exc:
        errors.append(OperationError(
            stage=stage,  # type: ignore[arg-type]
            message=f"the {stage} answer could not be parsed after one repair attempt ({exc}); "
            "nothing was changed",
        ))
        return None, usage


def _degraded(req: AddRequest, exc: LLMError, errors: list[OperationError], stage: str) -> None:
    if req.on_error != "degrade":
        raise exc
    errors.append(OperationError(
        stage=stage,  # type: ignore[arg-type]
        message=f"the {stage} LLM call failed ({exc}); nothing was changed",
    ))


def _embed(req: AddRequest, texts: Sequence[str],
           errors: list[OperationError]) -> Flow[list[Vector | None]]:
    """One vector per text. With ``on_error="degrade"``, a failed batch is retried text by
    text, and each text that still fails is reported and gets ``None``."""
    try:
        rows = yield from ask(Embed(tuple(texts)))
        return list(rows)
    except EmbeddingError:
        if req.on_error != "degrade":
            raise
    out: list[Vector | None] = []
    for text in texts:
        try:
            out.append((yield from ask(Embed((text,))))[0])
        except EmbeddingError as exc:
            out.append(None)
            errors.append(OperationError(
                stage="embedding", message=f"not stored: embedding failed ({exc})"[:500],
                operation={"text": text},
            ))
    return out


def _drop_unembedded(plan: _Plan) -> None:
    """Degraded adds and updates whose text could not be embedded are not applied."""
    dropped = {r.id for r in [*plan.batch.adds, *plan.batch.updates] if r.vector is None}
    # an update stands or falls with the past version it leaves behind
    dropped |= {target.id for target, past in plan.revised
                if past.vector is None or target.id in dropped}
    pasts = {past.id for target, past in plan.revised if target.id in dropped}
    plan.revised = [(t, p) for t, p in plan.revised if t.id not in dropped]
    plan.batch.versions = [v for v in plan.batch.versions if v.id not in pasts]
    plan.batch.adds = [r for r in plan.batch.adds if r.id not in dropped]
    plan.batch.updates = [r for r in plan.batch.updates if r.id not in dropped]
    plan.batch.history = [h for h in plan.batch.history if h.memory_id not in dropped]
    plan.events = [e for e in plan.events if e.id not in dropped or e.event not in ("ADD", "UPDATE")]


def _validate(
    plan: _Plan,
    decisions: Sequence[Decision | dict[str, Any]],
    existing: list[Record],
    vector_of: dict[str, Vector],
) -> None:
    """Turn the LLM's operations into a batch. Only shown labels can be touched."""
    by_hash = {r.hash: r for r in existing}
    touched: set[str] = set()
    added: set[str] = set()
    req = plan.request
    for decision in decisions:
        if not isinstance(decision, Decision):
            plan.reject(f"not a valid operation: {decision!r}", decision)
            continue
        raw = decision.model_dump()
        text = (decision.text or "").strip()
        if decision.event == "ADD":
            if not text:
                plan.reject("ADD without text", raw)
            elif text_hash(text) in by_hash:
                plan.none(by_hash[text_hash(text)], restated=True)
            elif text_hash(text) not in added:
                added.add(text_hash(text))
                plan.add(text, vector_of.get(text), plan.metadata(text, {}))
            continue
        target = _label(decision.id, existing)
        if target is None:
            if decision.event != "NONE":
                plan.reject(f"{decision.event} names id {decision.id!r}, which was not shown "
                            f"(valid ids: 0..{len(existing) - 1})", raw)
            continue
        if decision.event == "NONE":
            plan.none(target, restated=True)
            continue
        mismatch = _names_another(decision.old_memory, target, existing)
        if mismatch is not None:
            plan.reject(f"{decision.event} of id {decision.id!r} gives old_memory "
                        f"{decision.old_memory!r}, but that id holds {target.memory!r}"
                        f"{mismatch}; nothing was changed", raw)
            continue
        if target.id in touched:
            plan.reject(f"id {decision.id!r} was already changed by another operation", raw)
            continue
        if decision.event == "DELETE":
            touched.add(target.id)
            plan.batch.updates.append(end(target, req.timestamp))
            plan.events.append(target.to_event("DELETE", old=target.memory))
            plan.history(target, "DELETE", target.memory, None)
        elif not text:
            plan.reject("UPDATE without text", raw)
        elif text == target.memory:
            plan.none(target, restated=True)
        else:
            touched.add(target.id)
            changes: dict[str, object] = {"metadata": plan.metadata(text, target.metadata),
                                          **plan.lifecycle(text)}
            if req.expires_at is not None:
                changes["expires_at"] = req.expires_at
            updated, past = revise(target, text, req.timestamp, vector_of.get(text), None,
                                   **changes)
            plan.batch.updates.append(updated)
            plan.batch.versions.append(past)
            plan.revised.append((target, past))
            plan.events.append(updated.to_event("UPDATE", old=target.memory, new=text))
            plan.history(target, "UPDATE", target.memory, text)


def _label(label: str | None, existing: list[Record]) -> Record | None:
    """The memory shown under ``label``: ASCII digits only (``"²"`` is a digit to
    ``str.isdigit`` but not to ``int``)."""
    if label is None or not label.isascii() or not label.isdigit() or len(label) > 6:
        return None
    index = int(label)
    return existing[index] if index < len(existing) else None


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


def _names_another(old: str | None, target: Record, existing: list[Record]) -> str | None:
    """Why ``old`` (the text the LLM says the label held) clearly names another memory
    than ``target``, or ``None`` when it plausibly names ``target`` (or is absent).

    Clear: it is another shown memory's text, or shares under a third of its
    words with the target's text. Paraphrases and trimmed texts pass."""
    if old is None or not old.strip():
        return None
    key = " ".join(old.casefold().split())
    if key == " ".join(target.memory.casefold().split()):
        return None
    for other in existing:
        if other.id != target.id and key == " ".join(other.memory.casefold().split()):
            return " (it is the text of another memory)"
    said, held = _words(old[:10_000]), _words(target.memory[:10_000])
    if said and held and len(said & held) / len(said | held) < 1 / 3:
        return " (they share too few words)"
    return None


def _apply(plan: _Plan, graph: GraphPlan | None = None,
           ) -> Flow[tuple[list[MemoryEvent], GraphOutcome]]:
    """Apply the batch (and the graph writes); adds a concurrent writer beat us to become
    NONE events of the winner.

    A dry run applies nothing: it only reads which adds would be duplicates.
    """
    outcome = GraphOutcome()
    if plan.request.dry_run:
        winners = yield from duplicates(plan.batch)
    elif graph is not None:
        applied, outcome = yield from apply_with_graph(plan.batch, graph, plan.events)
        winners = applied.winners
    else:
        winners = (yield from apply(plan.batch)).winners
    if not winners:
        return plan.events, outcome
    events: list[MemoryEvent] = []
    for event in plan.events:
        winner = winners.get(event.id) if event.event == "ADD" else None
        if winner is not None:
            if any(e.id == winner.id and e.event == "NONE" for e in events):
                continue
            event = winner.to_event("NONE")
        events.append(event)
    return events, outcome


def _add_verbatim(req: AddRequest, graph: GraphPlan | None) -> Flow[AddResult]:
    """``infer=False``: every non-system message becomes a memory as it is (linked to the
    entities the caller named, with ``graph``)."""
    plan = _Plan(req, req.batch())
    kept = [m for m in req.messages if m["role"] != "system" and m["content"].strip()]
    if not kept:
        return AddResult()
    texts = [m["content"] for m in kept]
    dialogue = is_dialogue([m.get("name") or m["role"] for m in kept])
    if dialogue:
        # Each turn is indexed with its context: embedded after the turn before it, then
        # mixed with its neighbours (what get() returns is the turn alone).
        contextual = yield from _embed(req, with_previous(texts), plan.errors)
        vectors = contextual
        if all(v is not None for v in contextual):
            vectors = list(with_neighbours(np.stack(contextual)))  # type: ignore[arg-type]
    else:
        vectors = yield from _embed(req, texts, plan.errors)
    previous: str | None = None
    for message, vector in zip(kept, vectors, strict=True):
        if vector is None:
            previous = None
            continue
        metadata = {**req.metadata, "role": message["role"]}
        if "name" in message:
            metadata["name"] = message["name"]
        if previous is not None:  # a dialogue's turns are linked in order (keyword context)
            metadata[PREVIOUS_TURN] = previous
        added = plan.add(message["content"], vector, metadata, message["role"],
                         message.get("name"))
        previous = added if dialogue else None
    if not req.dry_run:
        yield from embed_names(graph)
    results, outcome = yield from _apply(plan, graph)
    return AddResult(results=results, errors=[*plan.errors, *outcome.errors],
                     entities=[entity_model(e) for e in outcome.created])
