"""What a pipeline asks its driver to do. Pure data; no I/O happens here.

Two kinds: effects a flow yields (``Effect``), and the store writes a write flow
yields inside :class:`Transaction` (``WriteEffect``), which the driver runs
inside the store's transaction. Each effect declares what it returns
(``Returns[...]``); a flow asks for it with :func:`ask` (or :func:`ask_write`
inside a transaction), which gives the result that type::

    hits = yield from ask(Search(vector, 10, None))  # list[Hit]

A bare ``yield`` of an effect gives ``object``: its result must go through ``ask``.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, cast

from memkit._filters import Filter
from memkit._models import Change, HistoryRecord, SearchLogEntry
from memkit.embeddings.base import Embedder, Matrix
from memkit.graph.base import Entity, GraphScope, NewEntity, NewRelation, Relation, Subgraph
from memkit.llms.base import LLMRequest, LLMResponse
from memkit.stores.base import Hit, Order, Record, Vector, VectorStore

if TYPE_CHECKING:
    from memkit._notes.markdown import FolderSnapshot  # noqa: F401 - in a base's string
    from memkit._pipeline.features.lifecycle import Access  # noqa: F401

T = TypeVar("T")
R = TypeVar("R", covariant=True)


class Returns(Generic[R]):
    """The base of every effect: ``R`` is what the driver sends back for it."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Complete(Returns[LLMResponse]):
    """-> LLMResponse"""

    request: LLMRequest


@dataclass(frozen=True, slots=True)
class Embed(Returns[Matrix]):
    """-> float32 matrix, one normalised row per text (by ``embedder``: by default the
    configured one); ``query``: the texts are search queries, which an asymmetric model
    (e5) embeds differently from what is stored"""

    texts: tuple[str, ...]
    embedder: Embedder | None = None
    query: bool = False


@dataclass(frozen=True, slots=True)
class Rerank(Returns[list[tuple[int, float]]]):
    """-> Ranking (memkit.rerankers.base): ``(index, score)`` of every document, best first,
    by the configured reranker"""

    query: str
    documents: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Search(Returns[list[Hit]]):
    """-> list[Hit]; also a write effect (the near-duplicate check inside the transaction)"""

    vector: Vector
    limit: int
    filter: Filter | None


@dataclass(frozen=True, slots=True)
class KeywordSearch(Returns[list[Hit]]):
    """-> list[Hit]"""

    text: str
    limit: int
    filter: Filter | None


@dataclass(frozen=True, slots=True)
class Get(Returns[Record | None]):
    """-> Record | None; also a write effect (what the graph's upkeep reads under the lock)"""

    id: str


@dataclass(frozen=True, slots=True)
class ListRecords(Returns[tuple[list[Record], str | None]]):
    """-> (list[Record], next cursor); also a write effect (reads inside the transaction)"""

    filter: Filter | None
    limit: int
    cursor: str | None = None
    order: Order = "id"


@dataclass(frozen=True, slots=True)
class Project(Returns[list[tuple[Any, ...]]]):
    """-> the ``fields`` of every record matching ``filter`` (``VectorStore.project``)"""

    fields: tuple[str, ...]
    filter: Filter | None


@dataclass(frozen=True, slots=True)
class Transaction(Returns[T]):
    """-> the write flow's result, its writes committed together (or none of them)"""

    key: str
    flow: WriteFlow[T]


@dataclass(frozen=True, slots=True)
class ReadHistory(Returns[list[HistoryRecord]]):
    """-> list[HistoryRecord]"""

    memory_id: str


@dataclass(frozen=True, slots=True)
class ReadChanges(Returns[list[Change]]):
    """-> list[Change]: the feed's changes committed after ``after``, in commit order"""

    after: str | None
    scope: tuple[tuple[str, str], ...]
    limit: int


@dataclass(frozen=True, slots=True)
class ReadEvent(Returns[HistoryRecord | None]):
    """-> HistoryRecord | None; also a write effect (graph work checks it is still owed)"""

    event_id: str


@dataclass(frozen=True, slots=True)
class ResetStore(Returns[None]):
    """-> None"""


@dataclass(frozen=True, slots=True)
class ResetHistory(Returns[None]):
    """-> None: every history row and logged search is deleted; no search begun by
    ``cleared_at`` is logged later"""

    cleared_at: str


@dataclass(frozen=True, slots=True)
class ForgetHistory(Returns[None]):
    """-> None: the history rows of ``memory_ids`` (not their PURGE rows) and the logged
    searches that returned any of them are deleted"""

    memory_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DiscardEvents(Returns[None]):
    """-> None: the history rows with these ids are deleted (graph work done); also a write
    effect (in the transaction that did the work)"""

    event_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ForgetScope(Returns[None]):
    """-> None: every history row (not PURGE rows) and logged search of ``scope`` (each
    field given must match) is deleted; no search of it begun by ``purged_at`` is logged
    later"""

    scope: tuple[tuple[str, str], ...]
    purged_at: str


@dataclass(frozen=True, slots=True)
class Scrub(Returns[None]):
    """-> None: the store, the history and the graph make what was deleted unreadable from
    their files where they can (:meth:`VectorStore.scrub`)"""


@dataclass(frozen=True, slots=True)
class NoteAccess(Returns[bool]):
    """-> bool: whether the buffer of accesses is due to be written (memkit._pipeline.features.lifecycle)"""

    records: tuple[Record, ...]
    at: str
    useful: bool = True


@dataclass(frozen=True, slots=True)
class TakeAccesses(Returns["dict[str, Access]"]):
    """-> the buffered accesses, emptying the buffer"""


@dataclass(frozen=True, slots=True)
class CountAdds(Returns[bool]):
    """-> bool: ``count`` more memories added to the scope ``key``; whether ``every`` were
    reached since the last time (the count then restarts)"""

    key: str
    count: int
    every: int


@dataclass(frozen=True, slots=True)
class Monotonic(Returns[float]):
    """-> float: seconds on a monotonic clock (to time an operation)"""


@dataclass(frozen=True, slots=True)
class LogSearch(Returns[None]):
    """-> None: append a search to the search log (memkit._pipeline.features.feedback)"""

    entry: SearchLogEntry


@dataclass(frozen=True, slots=True)
class ReadSearchLog(Returns[list[SearchLogEntry]]):
    """-> list[SearchLogEntry], newest first"""

    scope: tuple[tuple[str, str], ...]
    limit: int


@dataclass(frozen=True, slots=True)
class OpenShadow(Returns[VectorStore]):
    """-> VectorStore: an empty collection beside the store's, open for another embedder's
    vectors (:meth:`VectorStore.shadow`)"""

    dimension: int
    model: str


@dataclass(frozen=True, slots=True)
class DropShadow(Returns[None]):
    """-> None: drop a shadow collection that will not be switched to"""

    shadow: VectorStore


@dataclass(frozen=True, slots=True)
class UseEmbedder(Returns[None]):
    """-> None: embed with ``embedder`` from now on (the store was switched to its vectors)"""

    embedder: Embedder


@dataclass(frozen=True, slots=True)
class ReadNotes(Returns["FolderSnapshot"]):
    """-> FolderSnapshot: the markdown files of ``folder`` split into chunks
    (memkit._notes.markdown)"""

    folder: str
    max_file_bytes: int


@dataclass(frozen=True, slots=True)
class AppendLog(Returns[None]):
    """-> None: ``lines`` appended to the daily log file ``path`` (memkit._notes.daily_log)"""

    path: str
    title: str
    lines: tuple[str, ...]


# -- inside a Transaction ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Insert(Returns[None]):
    """-> None"""

    records: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class Update(Returns[None]):
    """-> None"""

    records: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class Delete(Returns[None]):
    """-> None"""

    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OnShadow(Returns[T]):
    """-> what ``effect`` (ListRecords, Insert, Update or Delete) returns, run against the
    shadow collection instead of the store (also an effect outside a transaction)"""

    shadow: VectorStore
    effect: Returns[T]


@dataclass(frozen=True, slots=True)
class Switch(Returns[None]):
    """-> None: the store serves the shadow collection from now on (:meth:`VectorStore.switch`)"""

    shadow: VectorStore


@dataclass(frozen=True, slots=True)
class AppendHistory(Returns[None]):
    """-> None"""

    rows: tuple[HistoryRecord, ...]


# -- the knowledge graph (memkit.graph.base.GraphStore's operations) -------------------
# Also write effects: inside a transaction they run there when the graph shares the
# store's file or database.


@dataclass(frozen=True, slots=True)
class UpsertEntities(Returns[list[Entity]]):
    """-> the entities, created or updated (:meth:`GraphStore.upsert_entities`)"""

    scope: GraphScope
    entities: Sequence[NewEntity]
    now: str


@dataclass(frozen=True, slots=True)
class UpsertRelations(Returns[list[Relation]]):
    """-> the relations, opened or reinforced (:meth:`GraphStore.upsert_relations`)"""

    scope: GraphScope
    relations: Sequence[NewRelation]
    now: str


@dataclass(frozen=True, slots=True)
class CloseRelations(Returns[list[Relation]]):
    """-> the open relations among ``ids``, closed at ``now``"""

    scope: GraphScope
    ids: Sequence[str]
    now: str


@dataclass(frozen=True, slots=True)
class FindRelations(Returns[list[Relation]]):
    """-> the relations matching every criterion given (:meth:`GraphStore.relations`)"""

    scope: GraphScope
    source: str | None = None
    type: str | None = None
    target: str | None = None
    memory_ids: Sequence[str] | None = None
    include_closed: bool = False


@dataclass(frozen=True, slots=True)
class FindEntities(Returns[list[Entity]]):
    """-> the scope's entities with these names, of this type (:meth:`GraphStore.entities`)"""

    scope: GraphScope
    names: Sequence[str] | None = None
    type: str | None = None
    limit: int = 100


@dataclass(frozen=True, slots=True)
class Neighbourhood(Returns[Subgraph]):
    """-> the entities within ``depth`` open relations of the named ones, and their relations"""

    scope: GraphScope
    names: Sequence[str]
    depth: int


@dataclass(frozen=True, slots=True)
class DeleteEntities(Returns[list[Entity]]):
    """-> the entities deleted, with every relation touching them"""

    scope: GraphScope
    names: Sequence[str]


@dataclass(frozen=True, slots=True)
class DeleteRelations(Returns[int]):
    """-> how many of the relations ``ids`` existed (now deleted)"""

    scope: GraphScope
    ids: Sequence[str]


@dataclass(frozen=True, slots=True)
class ResolveNames(Returns[dict[str, str]]):
    """-> the entity each name means, by name (:meth:`GraphStore.resolve`)"""

    scope: GraphScope
    names: Sequence[str]
    vectors: Sequence[Sequence[float]] | None = None
    threshold: float = 1.0
    #: the memories whose add resolves the names: the aliases used are recorded as theirs
    memory_ids: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class EntitiesById(Returns[list[Entity]]):
    """-> the scope's entities among ``ids`` (:meth:`GraphStore.entities_by_id`)"""

    scope: GraphScope
    ids: Sequence[str]


@dataclass(frozen=True, slots=True)
class LinkMemories(Returns[list[Entity]]):
    """-> the named entities (created when missing), linked to ``memory_ids``"""

    scope: GraphScope
    names: Sequence[str]
    memory_ids: Sequence[str]
    now: str


@dataclass(frozen=True, slots=True)
class EntityMemoryIds(Returns[list[str]]):
    """-> the memories whose adds named the entities ``ids`` (:meth:`GraphStore.memory_ids_of`)"""

    scope: GraphScope
    ids: Sequence[str]


@dataclass(frozen=True, slots=True)
class SetNameVectors(Returns[None]):
    """-> None: each named entity keeps its name embedding (:meth:`GraphStore.set_vectors`)"""

    scope: GraphScope
    names: Sequence[str]
    vectors: Sequence[Sequence[float]]


@dataclass(frozen=True, slots=True)
class Repoint(Returns[None]):
    """-> None: relations from each ``(old, new)`` memory id's old one come from the new one"""

    scope: GraphScope
    moves: Sequence[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class EmbeddedNames(Returns[list[tuple[str, str]]]):
    """-> ``(id, name)`` of every entity with a name embedding, in every scope"""


@dataclass(frozen=True, slots=True)
class ReplaceNameVectors(Returns[None]):
    """-> None: the name embeddings of the entities ``ids`` replaced (``None`` removes one)"""

    ids: Sequence[str]
    vectors: Sequence[Sequence[float] | None]


@dataclass(frozen=True, slots=True)
class ForgetMemories(Returns[list[str]]):
    """-> the ids of the relations and entities deleted: ``memory_ids`` leave every
    relation, and what they alone supported goes (:meth:`GraphStore.forget_memories`)"""

    memory_ids: Sequence[str]


@dataclass(frozen=True, slots=True)
class ForgetGraphScope(Returns[None]):
    """-> None: the graph of every scope matching ``scope`` is deleted"""

    scope: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ResetGraph(Returns[None]):
    """-> None: every entity and relation of every scope is deleted"""


GraphEffect: TypeAlias = (
    UpsertEntities | UpsertRelations | CloseRelations | FindRelations | FindEntities
    | Neighbourhood | DeleteEntities | DeleteRelations | ResolveNames | SetNameVectors
    | EntitiesById | LinkMemories | EntityMemoryIds | Repoint | EmbeddedNames
    | ReplaceNameVectors | ForgetMemories | ForgetGraphScope | ResetGraph
)


Effect: TypeAlias = (
    Complete | Embed | Search | KeywordSearch | Get | ListRecords | Project | Transaction[Any]
    | ReadHistory | ReadChanges
    | ReadEvent | ResetStore | ResetHistory | ForgetHistory | DiscardEvents | ForgetScope | Scrub
    | NoteAccess | TakeAccesses
    | CountAdds | GraphEffect | Monotonic | LogSearch | ReadSearchLog
    | OpenShadow | DropShadow | UseEmbedder | OnShadow[Any] | ReadNotes | AppendLog | Rerank
)
WriteEffect: TypeAlias = (
    ListRecords | Search | Insert | Update | Delete | AppendHistory | GraphEffect | OnShadow[Any] | Switch
    | ReadEvent | DiscardEvents | Get
)
Flow: TypeAlias = Generator[Effect, object, T]
"""A flow: yields effects, is sent their results (through :func:`ask`), returns ``T``."""
WriteFlow: TypeAlias = Generator[WriteEffect, object, T]
"""A write flow: runs inside a :class:`Transaction`."""


def ask(effect: Returns[T]) -> Flow[T]:
    """Yield ``effect`` and return its result, typed as the effect declares."""
    result = yield cast(Effect, effect)
    return cast(T, result)


def ask_write(effect: Returns[T]) -> WriteFlow[T]:
    """:func:`ask` inside a transaction (a write flow)."""
    result = yield cast(WriteEffect, effect)
    return cast(T, result)


def ask_list(effect: ListRecords) -> Generator[ListRecords, object, tuple[list[Record], str | None]]:
    """:func:`ask` for the one effect that is read both outside and inside a transaction,
    so that flows built on it (``scan``) serve both."""
    result = yield effect
    return cast(tuple[list[Record], str | None], result)


def ask_shadow(effect: OnShadow[T]) -> Generator[OnShadow[Any], object, T]:
    """:func:`ask` for an effect on a shadow collection, which runs outside and inside a
    transaction alike."""
    result = yield effect
    return cast(T, result)
