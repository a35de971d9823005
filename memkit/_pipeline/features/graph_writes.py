"""How a change to memories reaches the graph: in the change's own transaction where the
graph shares it (sqlite, postgres), else right after it through the outbox
(:mod:`memkit._pipeline.features.outbox`), and the replay of what the outbox still owes.

An add writes its relations (:func:`apply_with_graph`); a change of validity
(:func:`apply_with_validity`) closes the open relations no current memory supports any
more (a delete, a prune) and moves relations from one memory to another (a
consolidation, a supersede). Each of them first replays the work older changes still
owe (:func:`repair_flow`), so the graph's writes keep the order of the changes: while the
graph is down a change with graph work fails before it writes anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memkit._models import MemoryEvent
from memkit._pipeline.effects import (
    AppendHistory,
    CloseRelations,
    Embed,
    FindRelations,
    Flow,
    Get,
    Repoint,
    Transaction,
    WriteFlow,
    ask,
    ask_write,
)
from memkit._pipeline.features.graph import (
    GraphOutcome,
    GraphPlan,
    GraphSettings,
    graph_event,
    write_work,
)
from memkit._pipeline.features.outbox import (
    GraphWork,
    ValidityWork,
    Work,
    claim,
    new_work_id,
    pending_flow,
    settle,
    targets,
)
from memkit._pipeline.write.apply import Applied, apply_flow, transaction, writes
from memkit._pipeline.write.versions import is_valid
from memkit.graph.base import GraphScope, Relation
from memkit.stores.base import Record, WriteBatch

# -- adds ------------------------------------------------------------------------


def apply_with_graph(batch: WriteBatch, plan: GraphPlan | None, events: Sequence[MemoryEvent],
                     ) -> Flow[tuple[Applied, GraphOutcome]]:
    """The batch, and the graph writes in its transaction (or right after it, the work
    recorded in the outbox by the batch's transaction until it is done)."""
    empty = not writes(batch)
    if plan is None or plan.empty:
        applied = Applied() if empty else (yield from ask(transaction(batch)))
        return applied, GraphOutcome()
    key = transaction(batch).key
    if plan.settings.joined:
        result: tuple[Applied, GraphOutcome] = yield from ask(Transaction(
            key, _together(batch, plan, events)))
        return result
    yield from repair_flow()
    applied, work = yield from ask(Transaction(key, _recorded(batch, plan, events, key)))
    outcome = yield from ask(Transaction(key, _owed(work, plan.vectors, replay=False)))
    return applied, outcome or GraphOutcome()


def _work(batch: WriteBatch, plan: GraphPlan, events: Sequence[MemoryEvent], applied: Applied,
          key: str) -> GraphWork:
    linked, updated, gone = targets(
        batch, events, [(skipped, won.id) for skipped, won in applied.winners.items()])
    return GraphWork(new_work_id(), key, plan.scope, plan.now, plan.settings.threshold,
                     tuple(plan.entities), tuple(plan.relations), tuple(plan.named), linked,
                     updated, gone)


def _together(batch: WriteBatch, plan: GraphPlan,
              events: Sequence[MemoryEvent]) -> WriteFlow[tuple[Applied, GraphOutcome]]:
    applied = yield from apply_flow(batch)
    outcome = yield from write_work(_work(batch, plan, events, applied, ""), plan.vectors)
    return applied, outcome


def _recorded(batch: WriteBatch, plan: GraphPlan, events: Sequence[MemoryEvent],
              key: str) -> WriteFlow[tuple[Applied, GraphWork]]:
    """The batch, and the graph work it leads to, pending in the history."""
    applied = yield from apply_flow(batch)
    work = _work(batch, plan, events, applied, key)
    yield AppendHistory((work.row(),))
    return applied, work


def _owed(work: GraphWork, vectors: dict[str, list[float]],
          replay: bool) -> WriteFlow[GraphOutcome | None]:
    """The add's pending graph work, unless another process did it meanwhile (None)."""
    if not (yield from claim(work.id)):
        return None
    outcome = yield from write_work(work, vectors, replay=replay)
    yield from settle(work.id)
    return outcome


# -- changes of validity ---------------------------------------------------------


def validity_work(key: str, now: str, ended: Sequence[Record] = (),
                  moves: Sequence[tuple[Record, str]] = ()) -> list[ValidityWork]:
    """The graph work, one per scope, of the memories ``ended`` (their validity ended) and
    of the ``moves`` (a memory, and the memory its relations move to)."""
    by_scope: dict[GraphScope, ValidityWork] = {}

    def of(record: Record) -> ValidityWork:
        scope = GraphScope(record.user_id, record.agent_id, record.run_id)
        return by_scope.setdefault(scope, ValidityWork(new_work_id(), key, scope, now))

    for record in ended:
        work = of(record)
        by_scope[work.scope] = replace(work, ended=(*work.ended, record.id))
    for record, to in moves:
        work = of(record)
        by_scope[work.scope] = replace(work, moves=(*work.moves, (record.id, to)))
    return list(by_scope.values())


def apply_with_validity(batch: WriteBatch, works: Sequence[ValidityWork],
                        graph: GraphSettings | None) -> Flow[Applied]:
    """Apply ``batch``, whose changes of validity lead to the graph ``works``: in the
    batch's transaction when the graph shares it, else right after it (the works recorded
    in the outbox by the batch's transaction until they are done)."""
    key = transaction(batch).key
    if graph is None or not works:
        return (yield from ask(transaction(batch)))
    if graph.joined:
        return (yield from ask(Transaction(key, _with_validity(batch, works))))
    yield from repair_flow()
    applied: Applied = yield from ask(Transaction(key, _validity_recorded(batch, works)))
    for work in works:
        yield from _validity_owed(work)
    return applied


def _with_validity(batch: WriteBatch, works: Sequence[ValidityWork]) -> WriteFlow[Applied]:
    applied = yield from apply_flow(batch)
    for work in works:
        yield from _validity_graph(work)
    return applied


def _validity_recorded(batch: WriteBatch, works: Sequence[ValidityWork]) -> WriteFlow[Applied]:
    applied = yield from apply_flow(batch)
    yield AppendHistory(tuple(w.row() for w in works))
    return applied


def _validity_owed(work: ValidityWork) -> Flow[bool]:
    """Do the pending ``work``; False when another process did it meanwhile."""
    done: bool = yield from ask(Transaction(work.key, _validity_claimed(work)))
    return done


def _validity_claimed(work: ValidityWork) -> WriteFlow[bool]:
    if not (yield from claim(work.id)):
        return False
    yield from _validity_graph(work)
    yield from settle(work.id)
    return True


def _unsupported(work: ValidityWork) -> WriteFlow[list[Relation]]:
    """The relations the ended memories supported that no current memory supports, open,
    or closed at the work's moment (by an earlier try of it); read under the scope's lock,
    so an add that gives one of them another memory meanwhile is seen."""
    if not work.ended:
        return []
    ids = set(work.ended)
    found = yield from ask_write(FindRelations(
        work.scope, memory_ids=sorted(ids), include_closed=True))
    found = [r for r in found if r.valid_to is None or r.valid_to == work.now]
    alive: set[str] = set()
    for other in sorted({m for r in found for m in r.memory_ids} - ids):
        supporter = yield from ask_write(Get(other))
        if supporter is not None and is_valid(supporter, work.now):
            alive.add(other)
    return [r for r in found if not alive & set(r.memory_ids)]


def _validity_graph(work: ValidityWork) -> WriteFlow[None]:
    if work.moves:
        yield Repoint(work.scope, work.moves)
    closing = yield from _unsupported(work)
    opened = [r.id for r in closing if r.valid_to is None]
    closed = (yield from ask_write(CloseRelations(work.scope, opened, work.now))
              ) if opened else []
    closed += [r for r in closing if r.valid_to is not None]
    if closed:
        yield AppendHistory(tuple(graph_event(r, "RELATION_CLOSE", work.now) for r in closed))


# -- replay ----------------------------------------------------------------------


def repair_flow() -> Flow[int]:
    """Replay the graph work failed graph writes left pending, oldest first; how many it
    did (work another process did meanwhile is not counted)."""
    pending: list[Work] = yield from pending_flow()
    done = 0
    for work in pending:
        if isinstance(work, ValidityWork):
            done += (yield from _validity_owed(work))
            continue
        vectors: dict[str, list[float]] = {}
        names = work.names
        if names:
            rows = yield from ask(Embed(tuple(names)))
            vectors = {n: [float(x) for x in row] for n, row in zip(names, rows, strict=True)}
        outcome = yield from ask(Transaction(work.key, _owed(work, vectors, replay=True)))
        done += outcome is not None
    return done

