"""What a pipeline asks its driver to do. Pure data; no I/O happens here.

Two kinds: effects a flow yields (``Effect``), and the store writes a write flow
yields inside :class:`Transaction` (``WriteEffect``), which the driver runs
inside the store's transaction.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

from memkit._filters import Filter
from memkit._models import HistoryRecord, SearchLogEntry
from memkit.embeddings.base import Embedder
from memkit.llms.base import LLMRequest
from memkit.stores.base import Order, Record, Vector, VectorStore


@dataclass(frozen=True, slots=True)
class Complete:
    """-> LLMResponse"""

    request: LLMRequest


@dataclass(frozen=True, slots=True)
class Embed:
    """-> float32 matrix, one normalised row per text (by ``embedder``: by default the
    configured one); ``query``: the texts are search queries, which an asymmetric model
    (e5) embeds differently from what is stored"""

    texts: tuple[str, ...]
    embedder: Embedder | None = None
    query: bool = False


@dataclass(frozen=True, slots=True)
class Rerank:
    """-> Ranking: ``(index, score)`` of every document, best first, by the configured
    reranker"""

    query: str
    documents: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Search:
    """-> list[Hit]"""

    vector: Vector
    limit: int
    filter: Filter | None


@dataclass(frozen=True, slots=True)
class KeywordSearch:
    """-> list[Hit]"""

    text: str
    limit: int
    filter: Filter | None


@dataclass(frozen=True, slots=True)
class Get:
    """-> Record | None"""

    id: str


@dataclass(frozen=True, slots=True)
class ListRecords:
    """-> (list[Record], next cursor); also a write effect (reads inside the transaction)"""

    filter: Filter | None
    limit: int
    cursor: str | None = None
    order: Order = "id"


@dataclass(frozen=True, slots=True)
class Transaction:
    """-> the write flow's result, its writes committed together (or none of them)"""

    key: str
    flow: WriteFlow[Any]


@dataclass(frozen=True, slots=True)
class ReadHistory:
    """-> list[HistoryRecord]"""

    memory_id: str


@dataclass(frozen=True, slots=True)
class ReadEvent:
    """-> HistoryRecord | None"""

    event_id: str


@dataclass(frozen=True, slots=True)
class GraphCall:
    """-> what the graph store's ``method`` returns (also a write effect: inside a
    transaction it runs there when the graph shares the store's file or database)"""

    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ResetStore:
    """-> None"""


@dataclass(frozen=True, slots=True)
class ResetHistory:
    """-> None"""


@dataclass(frozen=True, slots=True)
class NoteAccess:
    """-> bool: whether the buffer of accesses is due to be written (memkit._pipeline.features.lifecycle)"""

    records: tuple[Record, ...]
    at: str
    useful: bool = True


@dataclass(frozen=True, slots=True)
class TakeAccesses:
    """-> the buffered accesses, emptying the buffer"""


@dataclass(frozen=True, slots=True)
class CountAdds:
    """-> bool: ``count`` more memories added to the scope ``key``; whether ``every`` were
    reached since the last time (the count then restarts)"""

    key: str
    count: int
    every: int


@dataclass(frozen=True, slots=True)
class Monotonic:
    """-> float: seconds on a monotonic clock (to time an operation)"""


@dataclass(frozen=True, slots=True)
class LogSearch:
    """-> None: append a search to the search log (memkit._pipeline.features.feedback)"""

    entry: SearchLogEntry


@dataclass(frozen=True, slots=True)
class ReadSearchLog:
    """-> list[SearchLogEntry], newest first"""

    scope: tuple[tuple[str, str], ...]
    limit: int


@dataclass(frozen=True, slots=True)
class OpenShadow:
    """-> VectorStore: an empty collection beside the store's, open for another embedder's
    vectors (:meth:`VectorStore.shadow`)"""

    dimension: int
    model: str


@dataclass(frozen=True, slots=True)
class DropShadow:
    """-> None: drop a shadow collection that will not be switched to"""

    shadow: VectorStore


@dataclass(frozen=True, slots=True)
class UseEmbedder:
    """-> None: embed with ``embedder`` from now on (the store was switched to its vectors)"""

    embedder: Embedder


@dataclass(frozen=True, slots=True)
class ReadNotes:
    """-> FolderSnapshot: the markdown files of ``folder`` split into chunks
    (memkit._notes.markdown)"""

    folder: str
    max_file_bytes: int


@dataclass(frozen=True, slots=True)
class AppendLog:
    """-> None: ``lines`` appended to the daily log file ``path`` (memkit._notes.daily_log)"""

    path: str
    title: str
    lines: tuple[str, ...]


# -- inside a Transaction ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Insert:
    """-> None"""

    records: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class Update:
    """-> None"""

    records: tuple[Record, ...]


@dataclass(frozen=True, slots=True)
class Delete:
    """-> None"""

    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OnShadow:
    """-> what ``effect`` returns, run against the shadow collection instead of the store
    (also an effect outside a transaction)"""

    shadow: VectorStore
    effect: ListRecords | Insert | Update | Delete


@dataclass(frozen=True, slots=True)
class Switch:
    """-> None: the store serves the shadow collection from now on (:meth:`VectorStore.switch`)"""

    shadow: VectorStore


@dataclass(frozen=True, slots=True)
class AppendHistory:
    """-> None"""

    rows: tuple[HistoryRecord, ...]


Effect: TypeAlias = (
    Complete | Embed | Search | KeywordSearch | Get | ListRecords | Transaction | ReadHistory
    | ReadEvent | ResetStore | ResetHistory | NoteAccess | TakeAccesses
    | CountAdds | GraphCall | Monotonic | LogSearch | ReadSearchLog
    | OpenShadow | DropShadow | UseEmbedder | OnShadow | ReadNotes | AppendLog | Rerank
)
WriteEffect: TypeAlias = (
    ListRecords | Insert | Update | Delete | AppendHistory | GraphCall | OnShadow | Switch
)
T = TypeVar("T")
Flow: TypeAlias = Generator[Effect, Any, T]
WriteFlow: TypeAlias = Generator[WriteEffect, Any, T]
