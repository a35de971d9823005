"""LangGraph and LangChain on memkit (extra ``langgraph``).

- :class:`MemkitStore`: LangGraph's ``BaseStore`` (the ``store`` of a graph, and what
  langmem writes to) kept in any memkit vector store (SQLite, Qdrant, Chroma,
  pgvector, in-memory) with memkit's embedders.
- :func:`memory_tools`: memkit's memory tools (``memkit.tools``) as LangChain tools
  for ``create_react_agent`` or ``bind_tools``.

::

    from langgraph.graph import StateGraph
    from memkit.integrations.langgraph import MemkitStore
    from memkit.stores.sqlite import SQLiteStore

    store = MemkitStore(SQLiteStore(path="langgraph.db"), index={"fields": ["text"]})
    graph = StateGraph(...).compile(store=store)

Give the store a collection of its own: its records are LangGraph items, not memories.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

try:
    from langchain_core.embeddings import Embeddings
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        IndexConfig,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        ensure_embeddings,
        get_text_at_path,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("langgraph is not installed; install it with: "
                      "pip install 'memkit-ai[langgraph]'") from exc

from memkit import And, Condition, Filter, MemkitError
from memkit.embeddings.base import Embedder, Matrix, normalise
from memkit.stores.base import Record, VectorStore
from memkit.tools import MemoryTools

if TYPE_CHECKING:
    from memkit import AsyncMemory, Memory

__all__ = ["LangChainEmbedder", "MemkitStore", "memory_tools"]

_ITEMS = uuid.UUID("6c616e67-6772-6170-6873-746f72650000")  # uuid5 namespace of item ids
_PAGE = 1000


class LangChainEmbedder(Embedder):
    """A LangChain ``Embeddings`` (or a function of texts) as a memkit embedder."""

    def __init__(self, embeddings: Any, dimension: int) -> None:
        self.embeddings: Embeddings = ensure_embeddings(embeddings)
        self.dimension = dimension
        self.model_name = f"langchain:{type(self.embeddings).__name__}:{dimension}"

    def embed(self, texts: Sequence[str]) -> Matrix:
        return normalise(self.embeddings.embed_documents(list(texts)), len(texts), self.dimension)

    def embed_query(self, texts: Sequence[str]) -> Matrix:
        """Through the model's ``embed_query``: asymmetric models embed questions apart."""
        rows = [self.embeddings.embed_query(text) for text in texts]
        return normalise(rows, len(texts), self.dimension)


def _embedder(index: IndexConfig | None, embedder: Embedder | None) -> Embedder:
    if embedder is not None:
        return embedder
    if index is not None and index.get("embed") is not None:
        return LangChainEmbedder(index["embed"], int(index["dims"]))
    from memkit.embeddings.local import LocalEmbedder

    return LocalEmbedder()


def _eq(name: str, value: Any) -> Condition:
    return Condition(field=name, operator="eq", value=value)


def _prefix_filter(prefix: Sequence[str]) -> Filter:
    if not prefix:
        return _eq("lg_item", True)
    return And(items=(_eq("lg_item", True), *(_eq(f"lg_ns{i}", label) for i, label in enumerate(prefix))))


def _matches(value: dict[str, Any], conditions: dict[str, Any] | None) -> bool:
    """LangGraph's value filter: exact values, or ``{"$eq"|"$ne"|"$gt"|... : x}``."""
    for key, wanted in (conditions or {}).items():
        actual = value.get(key)
        if isinstance(wanted, dict) and wanted and all(k.startswith("$") for k in wanted):
            for op, operand in wanted.items():
                if not _compare(op, actual, operand):
                    return False
        elif actual != wanted:
            return False
    return True


def _compare(op: str, actual: Any, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    if actual is None:
        return False
    try:
        return bool({"$gt": actual > operand, "$gte": actual >= operand,
                     "$lt": actual < operand, "$lte": actual <= operand}[op])
    except KeyError:
        raise ValueError(f"unsupported filter operator {op!r}") from None
    except TypeError:
        return False


class MemkitStore(BaseStore):
    """LangGraph's ``BaseStore`` over a memkit :class:`~memkit.stores.base.VectorStore`.

    ``index`` is LangGraph's index config: ``fields`` (JSON paths of the value to
    embed, default the whole value) and optionally ``embed``/``dims`` (a LangChain
    embeddings object); otherwise ``embedder`` (default: memkit's local embedder)
    embeds. Each embedded field is its own vector and an item scores its best one,
    as in LangGraph's stores. Search filters on values run on the namespace's items.
    """

    supports_ttl = False

    def __init__(
        self,
        vector_store: VectorStore | None = None,
        *,
        embedder: Embedder | None = None,
        index: IndexConfig | None = None,
    ) -> None:
        if vector_store is None:
            from memkit.stores.memory import InMemoryStore

            vector_store = InMemoryStore()
        self.vector_store = vector_store
        self.index_config = index
        self.embedder = _embedder(index, embedder)
        self.fields: list[str] = list((index or {}).get("fields") or ["$"])
        self.vector_store.open(self.embedder.dimension, self.embedder.model_name)
        self._blank = np.zeros(self.embedder.dimension, dtype=np.float32)
        self._blank[0] = 1.0  # the vector of items that are not indexed; never searched

    # -- BaseStore ---------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        for op in ops:
            if isinstance(op, PutOp):
                puts[(op.namespace, op.key)] = op  # the last put of an item wins
                results.append(None)
                continue
            self._write(puts.values())
            puts.clear()
            if isinstance(op, GetOp):
                results.append(self._get(op.namespace, op.key))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        self._write(puts.values())
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- reads -------------------------------------------------------------
    @staticmethod
    def _id(namespace: tuple[str, ...], key: str, part: int = 0) -> str:
        return str(uuid.uuid5(_ITEMS, json.dumps([list(namespace), key, part])))

    def _get_record(self, namespace: tuple[str, ...], key: str) -> Record | None:
        return self.vector_store.get(self._id(namespace, key))

    @staticmethod
    def _fields(record: Record) -> dict[str, Any]:
        meta = record.metadata
        return {"namespace": tuple(meta["lg_namespace"]), "key": meta["lg_key"], "value": meta["lg_value"],
                "created_at": datetime.fromisoformat(record.created_at),
                "updated_at": datetime.fromisoformat(record.updated_at)}

    def _item(self, record: Record) -> Item:
        return Item(**self._fields(record))

    def _search_item(self, record: Record, score: float | None = None) -> SearchItem:
        return SearchItem(**self._fields(record), score=score)

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        record = self._get_record(namespace, key)
        return None if record is None else self._item(record)

    def _records(self, filter: Filter | None) -> list[Record]:
        out: list[Record] = []
        cursor: str | None = None
        while True:
            page, cursor = self.vector_store.list(filter, limit=_PAGE, cursor=cursor)
            out.extend(page)
            if cursor is None:
                return out

    def _search(self, op: SearchOp) -> list[SearchItem]:
        items = [r for r in self._records(And(items=(_prefix_filter(op.namespace_prefix), _eq("lg_part", 0))))
                 if _matches(r.metadata["lg_value"], op.filter)]
        items.sort(key=lambda r: (r.created_at, r.metadata["lg_key"]))
        if not op.query:
            return [self._search_item(r) for r in items[op.offset: op.offset + op.limit]]
        wanted = {r.id for r in items}
        indexed = And(items=(_prefix_filter(op.namespace_prefix), _eq("lg_indexed", True)))
        total = self.vector_store.count(indexed)
        best: dict[str, tuple[float, Record]] = {}
        if total:
            vector = self.embedder.embed([op.query])[0]
            for hit in self.vector_store.search(vector, limit=total, filter=indexed):
                owner = self._id(tuple(hit.record.metadata["lg_namespace"]), hit.record.metadata["lg_key"])
                if owner in wanted and owner not in best:
                    best[owner] = (2 * hit.score - 1, hit.record)  # memkit's [0, 1] back to cosine
        by_id = {r.id: r for r in items}
        ranked = [(score, by_id[owner]) for owner, (score, _) in best.items()]
        kept: list[tuple[float | None, Record]] = list(ranked[op.offset: op.offset + op.limit])
        if len(kept) < op.limit:  # as LangGraph's stores: unindexed items fill up, unscored
            kept.extend((None, r) for r in items if r.id not in best)
            kept = kept[: op.limit]
        return [self._search_item(r, score) for score, r in kept]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix" and "*" not in condition.path:
                prefix = tuple(condition.path)
        found: set[tuple[str, ...]] = set()
        for record in self._records(And(items=(_prefix_filter(prefix), _eq("lg_part", 0)))):
            namespace = tuple(record.metadata["lg_namespace"])
            if all(_namespace_matches(namespace, c.match_type, tuple(c.path)) for c in op.match_conditions or ()):
                found.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(found)[op.offset: op.offset + op.limit]

    # -- writes ------------------------------------------------------------
    def _texts(self, value: Mapping[str, Any], index: Any) -> list[str]:
        if index is False:
            return []
        paths = self.fields if index is None or index is True else list(index)
        texts: list[str] = []
        for path in paths:
            if path == "$":
                texts.append(json.dumps(value, ensure_ascii=False))
            else:
                texts.extend(t for t in get_text_at_path(value, path) if t)
        return texts

    def _write(self, puts: Iterable[PutOp]) -> None:
        for op in list(puts):
            old = self._get_record(op.namespace, op.key)
            old_parts = int(old.metadata["lg_parts"]) if old is not None else 0
            if op.value is None:
                if old_parts:
                    self.vector_store.delete([self._id(op.namespace, op.key, p) for p in range(old_parts)])
                continue
            texts = self._texts(op.value, op.index)
            vectors = self.embedder.embed(texts) if texts else np.array([self._blank])
            now = datetime.now(UTC).isoformat(timespec="microseconds")  # a Record's timestamp
            created = old.created_at if old is not None else now
            base = {"lg_item": True, "lg_namespace": list(op.namespace), "lg_key": op.key,
                    "lg_value": op.value, "lg_indexed": bool(texts), "lg_parts": len(vectors),
                    **{f"lg_ns{i}": label for i, label in enumerate(op.namespace)}}
            records = [
                Record(id=self._id(op.namespace, op.key, part), memory=text,
                       hash=hashlib.md5(text.encode()).hexdigest(), created_at=created, updated_at=now,
                       metadata={**base, "lg_part": part}, vector=vectors[part])
                for part, text in enumerate(texts or [""])
            ]
            stale = [self._id(op.namespace, op.key, p) for p in range(old_parts)]
            if stale:
                self.vector_store.delete(stale)
            self.vector_store.insert(records)


def _namespace_matches(namespace: tuple[str, ...], kind: str, path: tuple[str, ...]) -> bool:
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if kind == "prefix" else namespace[len(namespace) - len(path):]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


def memory_tools(
    memory: Memory | AsyncMemory,
    *,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    names: Sequence[str] | None = None,
) -> list[BaseTool]:
    """memkit's memory tools as LangChain tools; the scope given here is fixed for the model."""
    tools = MemoryTools(memory, user_id=user_id, agent_id=agent_id, run_id=run_id, names=names)
    out: list[BaseTool] = []
    for spec in tools.specs:
        def call(_name: str = spec.name, **arguments: Any) -> dict[str, Any]:
            try:
                return tools.call(_name, arguments)
            except MemkitError as exc:  # the model reads the error and may retry
                raise ToolException(f"{type(exc).__name__}: {exc}") from exc

        async def acall(_name: str = spec.name, **arguments: Any) -> dict[str, Any]:
            try:
                return await tools.acall(_name, arguments)
            except MemkitError as exc:
                raise ToolException(f"{type(exc).__name__}: {exc}") from exc

        out.append(StructuredTool(
            name=spec.name, description=spec.description, args_schema=tools.parameters(spec.name),
            func=call, coroutine=acall, handle_tool_error=True,
        ))
    return out

