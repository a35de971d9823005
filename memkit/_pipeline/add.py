"""The add pipeline: extract -> embed -> search existing -> decide -> validate -> apply."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from memkit._filters import Filter, all_of
from memkit._models import AddResult, HistoryRecord, MemoryEvent, OperationError, Usage
from memkit._pipeline import prompts
from memkit._pipeline.apply import apply, duplicates
from memkit._pipeline.effects import Complete, Embed, Flow, Search
from memkit._pipeline.inputs import Scope, text_hash
from memkit._pipeline.parsing import Decision, ParseError, parse_decisions, parse_facts
from memkit._pipeline.versions import end, revise, valid_at
from memkit._time import to_datetime
from memkit.llms.base import LLMRequest, Message
from memkit.stores.base import Record, Vector, WriteBatch

T = TypeVar("T")


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
    expires_at: str | None = None
    dry_run: bool = False


@dataclass(slots=True)
class _Plan:
    """What validation kept: the batch to apply and the events it stands for."""

    request: AddRequest
    batch: WriteBatch
    events: list[MemoryEvent] = field(default_factory=list)
    errors: list[OperationError] = field(default_factory=list)
    #: updated memories whose past versions still need the old text's vector
    revised: list[tuple[Record, Record]] = field(default_factory=list)

    def history(self, record: Record, event: str, old: str | None, new: str | None,
                role: str | None = None, actor: str | None = None) -> None:
        self.batch.history.append(HistoryRecord(
            id=str(uuid.uuid4()), memory_id=record.id, event=event,  # type: ignore[arg-type]
            old_value=old, new_value=new, timestamp=to_datetime(self.request.timestamp),
            is_deleted=event == "DELETE", user_id=record.user_id, agent_id=record.agent_id,
            run_id=record.run_id, actor_id=actor, role=role,
        ))

    def add(self, text: str, vector: Vector | None, metadata: dict[str, Any],
            role: str | None = None, actor: str | None = None) -> None:
        req = self.request
        record = Record(
            id=str(uuid.uuid4()), memory=text, hash=text_hash(text),
            created_at=req.timestamp, updated_at=req.timestamp,
            user_id=req.scope.user_id, agent_id=req.scope.agent_id, run_id=req.scope.run_id,
            metadata=metadata, vector=vector, valid_from=req.timestamp, expires_at=req.expires_at,
        )
        self.batch.adds.append(record)
        self.events.append(record.to_event("ADD", new=text))
        self.history(record, "ADD", None, text, role, actor)

    def none(self, record: Record) -> None:
        self.events.append(record.to_event("NONE"))

    def reject(self, message: str, operation: dict[str, Any]) -> None:
        self.errors.append(OperationError(stage="validation", message=message, operation=operation))


def add_flow(req: AddRequest) -> Flow[AddResult]:
    if not req.infer:
        return (yield from _add_verbatim(req))
    usage = Usage()
    errors: list[OperationError] = []
    conversation = [m for m in req.messages if m["role"] != "system" and m["content"].strip()]
    if not conversation:
        return AddResult()
    today = to_datetime(req.timestamp).date().isoformat()
    custom = req.prompt if req.prompt is not None else req.extraction_prompt
    extraction = LLMRequest(prompts.extraction_messages(conversation, today, custom),
                            prompts.FACTS_SCHEMA, "facts", "extraction")
    facts, usage = yield from _ask(extraction, parse_facts, usage, errors, "extraction")
    if not facts:
        return AddResult(usage=usage, errors=errors)

    vectors = yield Embed(tuple(facts))
    scope_filter = req.scope.filter()
    search_filter = all_of(scope_filter, req.filters, valid_at(req.timestamp))
    shown: dict[str, Record] = {}
    for vector in vectors:
        for hit in (yield Search(vector, req.candidates_per_fact, search_filter)):
            shown.setdefault(hit.record.id, hit.record)
    existing = list(shown.values())
    plan = _Plan(req, WriteBatch(dedup_scope=scope_filter, valid_at=req.timestamp), errors=errors)
    known = {r.hash: r for r in existing}
    pending: list[str] = []
    vector_of: dict[str, Vector] = {}
    for fact, vector in zip(facts, vectors, strict=True):
        if text_hash(fact) in known:
            plan.none(known[text_hash(fact)])
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
        decisions, usage = yield from _ask(decision, parse_decisions, usage, errors, "decision")
        if decisions is None:
            return AddResult(results=plan.events, usage=usage, errors=errors)

    _validate(plan, decisions, existing, vector_of)
    missing = [r for r in [*plan.batch.adds, *plan.batch.updates] if r.vector is None]
    if missing and not req.dry_run:
        rows = yield Embed(tuple(r.memory for r in missing))
        for record, row in zip(missing, rows, strict=True):
            record.vector = row
    if plan.revised and not req.dry_run:  # a past version keeps the vector of its text
        rows = yield Embed(tuple(old.memory for old, _ in plan.revised))
        for (_, past), row in zip(plan.revised, rows, strict=True):
            past.vector = row
    results = yield from _apply(plan)
    return AddResult(results=results, usage=usage, errors=errors)


def _ask(
    request: LLMRequest,
    parse: Callable[[str], T],
    usage: Usage,
    errors: list[OperationError],
    stage: str,
) -> Flow[tuple[T | None, Usage]]:
    """Complete and parse; on a malformed answer, one repair attempt, then report it."""
    response = yield Complete(request)
    usage = usage.plus(response.usage)
    try:
        return parse(response.text), usage
    except ParseError as exc:
        problem = str(exc)
    repair = LLMRequest(prompts.repair_messages(request.messages, response.text, problem),
                        request.json_schema, request.schema_name, "repair")
    response = yield Complete(repair)
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
                plan.none(by_hash[text_hash(text)])
            elif text_hash(text) not in added:
                added.add(text_hash(text))
                plan.add(text, vector_of.get(text), dict(req.metadata))
            continue
        target = _label(decision.id, existing)
        if target is None:
            if decision.event != "NONE":
                plan.reject(f"{decision.event} names id {decision.id!r}, which was not shown "
                            f"(valid ids: 0..{len(existing) - 1})", raw)
            continue
        if decision.event == "NONE":
            plan.none(target)
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
            plan.none(target)
        else:
            touched.add(target.id)
            changes: dict[str, object] = {"metadata": {**target.metadata, **req.metadata}}
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
    if label is None or not label.isdigit() or len(label) > 6:
        return None
    index = int(label)
    return existing[index] if index < len(existing) else None


def _apply(plan: _Plan) -> Flow[list[MemoryEvent]]:
    """Apply the batch; adds a concurrent writer beat us to become NONE events of the winner.

    A dry run applies nothing: it only reads which adds would be duplicates.
    """
    if plan.request.dry_run:
        winners = yield from duplicates(plan.batch)
    else:
        winners = (yield from apply(plan.batch)).winners
    if not winners:
        return plan.events
    events: list[MemoryEvent] = []
    for event in plan.events:
        winner = winners.get(event.id) if event.event == "ADD" else None
        if winner is not None:
            if any(e.id == winner.id and e.event == "NONE" for e in events):
                continue
            event = winner.to_event("NONE")
        events.append(event)
    return events


def _add_verbatim(req: AddRequest) -> Flow[AddResult]:
    """``infer=False``: every non-system message becomes a memory as it is."""
    plan = _Plan(req, WriteBatch(dedup_scope=req.scope.filter(), valid_at=req.timestamp))
    kept = [m for m in req.messages if m["role"] != "system" and m["content"].strip()]
    if not kept:
        return AddResult()
    vectors = yield Embed(tuple(m["content"] for m in kept))
    for message, vector in zip(kept, vectors, strict=True):
        metadata = {**req.metadata, "role": message["role"]}
        if "name" in message:
            metadata["name"] = message["name"]
        plan.add(message["content"], vector, metadata, message["role"], message.get("name"))
    results = yield from _apply(plan)
    return AddResult(results=results)
