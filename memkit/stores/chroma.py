"""Chroma: embedded (``path``, or in memory) or a server (``host``/``port`` or ``url``).

memkit always passes its own embeddings (the collection has no embedding
function, so Chroma never downloads a model) and telemetry is off.

Chroma metadata is flat, its lists hold one type, and ``where`` has no
``$not``, no substring match on metadata and numeric-only ranges. So each
record's metadata holds the record as JSON (``"record"``) and a typed index of
its fields::

    n:f number (as a float: Chroma compares an integer field with a float operand
        by truncating the operand)   b:f boolean   s:f string   t:f timestamps in epoch µs
    ln:f / lb:f / ls:f / ll:f   the numbers (as floats), booleans, strings and
                                lower-cased strings of a list
    has                         the index keys present, for "missing" under negation
    id3                         the id's first three characters when they are hex digits
                                (every UUID's), else ``*``: the id's bucket for list pages

Negation is pushed to the leaves (``$ne``/``$nin``/``$not_contains`` hold on a
missing key; a negated range also accepts a key absent from ``has``).
``memory`` is the Chroma document: ``contains`` on it, as a top-level
conjunct, becomes ``where_document``. What Chroma cannot express (a substring
of any other field, ``icontains`` on ``memory``, ``contains`` on ``memory``
under ``OR``, ordering strings other than timestamps) is relaxed to "true" in
the query, which then selects a superset, and memkit keeps the candidates the
reference evaluator accepts: such filters are exact, at the cost of reading
every candidate (see :func:`translate`).

Chroma OSS ranks no full text, so there is no keyword search. Chroma orders
nothing and its ranges (``$gt`` on a number) and offsets read the whole
collection, but an equality or ``$in`` on a metadata string is indexed. So a
page in id order reads buckets of ``id3`` from the cursor's on, a run of them
at a time (sized from the collection's count to hold about one page), plus the
``*`` bucket, until it holds a page and one more record; every id below the
next unread bucket is then known. Newest-first pages, and pages of a
collection written before ``id3`` existed (no ``memkit:id3`` in its metadata),
fetch every matching id and sort here.
Server mode uses Chroma's ``AsyncHttpClient`` for the async methods; the
embedded client has no async API, so there they run in a worker thread.
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import json
import math
import re
from bisect import bisect_left
from collections.abc import Callable, Generator, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast
from urllib.parse import urlparse

import numpy as np

from memkit._env import env, env_port
from memkit._errors import ConfigError, VectorStoreError
from memkit._filters import BUILTIN_FIELDS, TIME_FIELDS, And, Condition, Filter, Not, Or, matches
from memkit._imports import require
from memkit._time import to_datetime
from memkit.stores._driven import DrivenStore, arun_calls, run_calls
from memkit.stores._generations import next_generation
from memkit.stores.base import (
    Hit,
    Order,
    Record,
    Vector,
    VectorStore,
    check_collection,
    cosine_to_score,
    cursor_key,
    cursor_of,
    page_after,
)

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

T = TypeVar("T")
Op = Generator[Callable[["Collection"], Any], Any, T]


def _unflushed(exc: Exception) -> bool:
    """A server sometimes answers a read of a freshly written collection with this
    (chroma-core/chroma#4212) until its segment is flushed; it passes in moments."""
    return "Nothing found on disk" in str(exc)
Where = dict[str, Any]

_BATCH = 1000
_NEVER: Where = {"has": {"$contains": ""}}  # "has" never holds the empty string
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_COMPLEMENT = {"gt": "$lte", "gte": "$lt", "lt": "$gte", "lte": "$gt"}
#: the hex buckets of ids, in order; ids whose first three characters are not hex digits
#: are in the bucket ``_ODD``
BUCKETS = [f"{i:03x}" for i in range(16**3)]
_ODD = "*"
_SECOND_US = 1_000_000
_YEAR_US = 366 * 86_400 * _SECOND_US
_HEX3 = re.compile(r"[0-9a-f]{3}")

# -- metadata --------------------------------------------------------------


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _epoch_us(value: str) -> int | None:
    try:
        return (to_datetime(value) - _EPOCH) // timedelta(microseconds=1)
    except ValueError:
        return None


def encode_metadata(record: Record) -> dict[str, Any]:
    """The Chroma metadata of a record: the record as JSON and its typed field index."""
    meta: dict[str, Any] = {"record": json.dumps(record.payload(), ensure_ascii=False)}
    fields = {k: v for k, v in record.metadata.items() if k not in BUILTIN_FIELDS}
    fields.update({k: getattr(record, k) for k in BUILTIN_FIELDS})
    for name, value in fields.items():
        if isinstance(value, bool):
            meta[f"b:{name}"] = value
        elif _is_number(value):
            meta[f"n:{name}"] = float(value)
        elif isinstance(value, str):
            meta[f"s:{name}"] = value
            if name in TIME_FIELDS and (micros := _epoch_us(value)) is not None:
                meta[f"t:{name}"] = micros
        elif isinstance(value, list):
            strings = [v for v in value if isinstance(v, str)]
            for key, items in (
                (f"lb:{name}", [v for v in value if isinstance(v, bool)]),
                (f"ln:{name}", [float(v) for v in value if _is_number(v)]),
                (f"ls:{name}", strings),
                (f"ll:{name}", [s.lower() for s in strings]),
            ):
                if items:
                    meta[key] = items
    meta["has"] = ["record", *sorted(meta)]
    meta["id3"] = bucket_of(record.id)
    return meta


def bucket_of(id: str) -> str:
    """The ``id3`` bucket of an id."""
    return id[:3] if _HEX3.fullmatch(id[:3]) else _ODD


def _now_us() -> int:
    return (datetime.now(UTC) - _EPOCH) // timedelta(microseconds=1)


def decode_record(id: str, metadata: dict[str, Any]) -> Record:
    return Record.from_payload(id, json.loads(metadata["record"]))


# -- filters ---------------------------------------------------------------


class Translated(NamedTuple):
    """A filter as Chroma's ``where`` and ``where_document`` (``None``: no condition).

    When ``exact`` is false they select a superset: the records must then be
    checked with the reference evaluator.
    """

    where: Where | None
    document: Where | None
    exact: bool


def _all(parts: builtins.list[Where | None]) -> Where | None:
    """AND; ``None`` is true."""
    present = [p for p in parts if p is not None]
    if any(p is _NEVER for p in present):
        return _NEVER
    if not present:
        return None
    return present[0] if len(present) == 1 else {"$and": present}


def _any(parts: builtins.list[Where | None]) -> Where | None:
    """OR; ``None`` is true, an empty OR is false."""
    if any(p is None for p in parts):
        return None
    present = [p for p in parts if p is not _NEVER]
    if not present:
        return _NEVER
    return present[0] if len(present) == 1 else {"$or": present}


def _typed(field: str, value: object, kinds: tuple[str, str, str]) -> tuple[str, Any]:
    boolean, number, string = kinds
    if isinstance(value, bool):
        return f"{boolean}:{field}", value
    if isinstance(value, str):
        return f"{string}:{field}", value
    assert isinstance(value, int | float)
    return f"{number}:{field}", float(value)


def _expressible(cond: Condition) -> bool:
    """Whether Chroma's ``where`` can say exactly what ``cond`` says."""
    op, value = cond.operator, cond.value
    if op in ("contains", "icontains"):
        return not isinstance(value, str)
    if op in _COMPLEMENT:
        return _is_number(value) or (
            isinstance(value, str) and cond.field in TIME_FIELDS and _epoch_us(value) is not None)
    return True


def _condition(cond: Condition, negate: bool) -> Where | None:
    field, op, value = cond.field, cond.operator, cond.value
    if op in ("ne", "nin"):
        return _condition(cond.model_copy(update={"operator": op[1:] if op == "nin" else "eq"}),
                          not negate)
    if not _expressible(cond):
        return None  # relaxed to true: the caller checks the candidates
    if op == "eq":
        key, operand = _typed(field, value, ("b", "n", "s"))
        return {key: {"$ne" if negate else "$eq": operand}}
    if op == "in":
        assert isinstance(value, tuple)
        groups: dict[str, builtins.list[Any]] = {}
        for item in value:
            key, operand = _typed(field, item, ("b", "n", "s"))
            groups.setdefault(key, []).append(operand)
        if negate:
            return _all([{k: {"$nin": v}} for k, v in groups.items()])
        return _any([{k: {"$in": v}} for k, v in groups.items()])
    if op == "contains":  # an element of a list
        key, operand = _typed(field, value, ("lb", "ln", "ls"))
        return {key: {"$not_contains" if negate else "$contains": operand}}
    # gt / gte / lt / lte
    bound: int | float
    if isinstance(value, str):
        micros = _epoch_us(value)
        assert micros is not None
        key, bound = f"t:{field}", micros
    else:
        assert isinstance(value, int | float)
        key, bound = f"n:{field}", float(value)
    if not negate:
        return {key: {f"${op}": bound}}
    return _any([{"has": {"$not_contains": key}}, {key: {_COMPLEMENT[op]: bound}}])


def _where(expr: Filter, negate: bool) -> Where | None:
    if isinstance(expr, Condition):
        return _condition(expr, negate)
    if isinstance(expr, Not):
        return _where(expr.item, not negate)
    parts = [_where(i, negate) for i in expr.items]
    return _all(parts) if isinstance(expr, And) != negate else _any(parts)


def _conditions(expr: Filter) -> Iterator[Condition]:
    if isinstance(expr, Condition):
        yield expr
    elif isinstance(expr, Not):
        yield from _conditions(expr.item)
    else:
        for item in expr.items:
            yield from _conditions(item)


def _conjuncts(expr: Filter, negate: bool) -> Generator[tuple[Filter, bool], None, None]:
    if isinstance(expr, Not):
        yield from _conjuncts(expr.item, not negate)
    elif (isinstance(expr, And) and not negate) or (isinstance(expr, Or) and negate):
        for item in expr.items:
            yield from _conjuncts(item, negate)
    else:
        yield expr, negate


def translate(expr: Filter) -> Translated:
    """The ``where`` and ``where_document`` of ``expr``.

    Negation is pushed to the leaves, so the expression is monotone in them:
    a leaf Chroma cannot express, taken as true, widens the selection to a
    superset (``exact`` is then false). A ``memory`` substring that is a
    top-level conjunct becomes ``where_document``.
    """
    where: builtins.list[Where | None] = []
    document: builtins.list[Where] = []
    exact = True
    for item, negate in _conjuncts(expr, False):
        if (isinstance(item, Condition) and item.field == "memory"
                and item.operator == "contains" and isinstance(item.value, str)):
            if item.value == "":  # every memory contains ""
                if negate:
                    where.append(_NEVER)
                continue
            document.append({"$not_contains" if negate else "$contains": item.value})
        else:
            where.append(_where(item, negate))
            exact = exact and all(_expressible(c) for c in _conditions(item))
    combined_document = None if not document else (
        document[0] if len(document) == 1 else {"$and": document}
    )
    return Translated(_all(where), combined_document, exact)


# -- the store -------------------------------------------------------------


class ChromaStore(DrivenStore):
    """Memories in a Chroma collection (cosine space), with memkit's own embeddings."""

    provider = "chroma"
    supports_keyword = False
    def __init__(
        self,
        path: str | None = None,
        host: str | None = None,
        port: int | None = None,
        collection_name: str = "memkit",
        url: str | None = None,
    ) -> None:
        super().__init__()
        if path is None and host is None and url is None:
            url, host = env("CHROMA_URL"), env("CHROMA_HOST")
            if host is not None and port is None:
                port = env_port("CHROMA_PORT")
        chromadb = require("chromadb", "chroma")
        config = require("chromadb.config", "chroma")
        if len(collection_name) < 3:
            raise ConfigError(
                f"chroma collection names have 3 characters or more: {collection_name!r}"
            )
        self.collection_name = self._live = collection_name
        self.path = path
        self.url = url if url is not None else (
            None if host is None else f"http://{host}:{port or 8000}"
        )
        self._settings = config.Settings(anonymized_telemetry=False)
        if url is not None:
            parsed = urlparse(url)
            host, port = parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 8000)
            self._ssl = parsed.scheme == "https"
        else:
            self._ssl = False
        self._server = host is not None
        self._host, self._port = host, port or 8000
        if self._server:
            self._client = chromadb.HttpClient(host=host, port=self._port, ssl=self._ssl,
                                               settings=self._settings)
            self.native_async = True
        elif path is not None:
            self._client = chromadb.PersistentClient(path=path, settings=self._settings)
        else:
            self._client = chromadb.EphemeralClient(settings=self._settings)
        self._collection: Any = None
        self._acollection: Any = None
        self._dimension: int | None = None
        self._model = ""
        self._meta: dict[str, Any] = {}
        #: whether every record of the collection has its ``id3`` bucket
        self._bucketed = False
        #: the window of creation times (µs) that held the last newest-first page
        self._newest_width = _SECOND_US

    @property
    def client(self) -> Any:
        """The underlying chromadb client."""
        return self._client

    # -- drivers ---------------------------------------------------------
    def _run(self, op: Op[T]) -> T:
        return run_calls(op, self._collection, "chroma", transient=_unflushed)

    async def _arun(self, op: Op[T]) -> T:
        if not self._server:
            return await asyncio.to_thread(self._run, op)
        if self._acollection is None:
            chromadb = require("chromadb", "chroma")
            client = await chromadb.AsyncHttpClient(
                host=self._host, port=self._port, ssl=self._ssl, settings=self._settings)
            self._acollection = await client.get_collection(self._live)
        return await arun_calls(op, self._acollection, "chroma", transient=_unflushed)

    # -- lifecycle -------------------------------------------------------
    def open(self, dimension: int, model: str) -> None:
        meta = {"hnsw:space": "cosine", "memkit:dimension": dimension, "memkit:model": model,
                "memkit:id3": True}
        try:
            collection = self._client.get_or_create_collection(
                self.collection_name, embedding_function=None, metadata=meta)
        except Exception as exc:
            raise VectorStoreError(f"chroma cannot open {self.collection_name!r}: {exc}") from exc
        stored = collection.metadata or {}
        check_collection(self.collection_name, (stored.get("memkit:dimension"), stored.get("memkit:model")),
                         dimension, model)
        self._live = stored.get("memkit:live") or self.collection_name
        if self._live != self.collection_name:
            collection = self._client.get_collection(self._live, embedding_function=None)
        self._bucketed = (collection.metadata or {}).get("memkit:id3") is True
        self._collection, self._dimension, self._model = collection, dimension, model

    # -- re-embedding (see memkit.stores._generations) --------------------
    def shadow(self, dimension: int, model: str) -> ChromaStore:
        shadow = copy.copy(self)
        shadow.collection_name = shadow._live = next_generation(self.collection_name, self._live)
        shadow._collection = shadow._acollection = None
        self._drop(shadow._live)  # what an interrupted re-embedding left
        shadow.open(dimension, model)
        return shadow

    def switch(self, shadow: VectorStore) -> None:
        """One write of the root collection's metadata (which then holds no records)."""
        assert isinstance(shadow, ChromaStore)
        root = self._client.get_collection(self.collection_name, embedding_function=None)
        root.modify(metadata={"memkit:dimension": shadow._dimension,
                              "memkit:model": shadow._model, "memkit:live": shadow._live})
        if self._live == self.collection_name:
            self._run(self._reset())
        else:
            self._drop(self._live)
        self._live, self._dimension = shadow._live, shadow._dimension
        self._collection, self._acollection = shadow._collection, None
        self._bucketed = shadow._bucketed

    def discard(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, ChromaStore)
        self._drop(shadow._live)

    def _drop(self, name: str) -> None:
        if name in {c.name for c in self._client.list_collections()}:
            self._client.delete_collection(name)

    async def aopen(self, dimension: int, model: str) -> None:
        await asyncio.to_thread(self.open, dimension, model)

    def close(self) -> None:
        self._collection = self._acollection = None

    # -- operations ------------------------------------------------------
    def _check(self, vector: Vector) -> None:
        if self._dimension is not None and vector.shape != (self._dimension,):
            raise VectorStoreError(
                f"vector has shape {vector.shape}, the collection holds "
                f"{self._dimension} dimensions"
            )

    def _ids(self, filter: Filter | None) -> Op[builtins.list[str]]:
        """The ids of the records matching ``filter``, sorted."""
        query = Translated(None, None, True) if filter is None else translate(filter)
        if filter is not None and not query.exact:
            return sorted(r.id for r in (yield from self._checked(filter, query)))
        if query.where is _NEVER:
            return []
        result = yield (lambda c: c.get(where=query.where, where_document=cast(Any, query.document),
                                         include=[]))
        return sorted(result["ids"])

    def _checked(self, filter: Filter, query: Translated) -> Op[builtins.list[Record]]:
        """The records matching ``filter``: the candidates ``query`` selects, checked."""
        if query.where is _NEVER:
            return []
        result = yield (lambda c: c.get(where=query.where, where_document=cast(Any, query.document),
                                         include=["metadatas"]))
        candidates = map(decode_record, result["ids"], result["metadatas"])
        return [r for r in candidates if matches(filter, r.lookup)]

    def _chunks(self, records: Sequence[Record]) -> Iterator[dict[str, Any]]:
        for record in records:
            if record.vector is None:
                raise VectorStoreError(f"record {record.id} has no vector")
            self._check(record.vector)
        for start in range(0, len(records), _BATCH):
            chunk = records[start:start + _BATCH]
            yield {
                "ids": [r.id for r in chunk],
                "embeddings": [r.vector.tolist() for r in chunk if r.vector is not None],
                "metadatas": [encode_metadata(r) for r in chunk],
                "documents": [r.memory for r in chunk],
            }

    def _insert(self, records: Sequence[Record]) -> Op[None]:
        for rows in self._chunks(records):
            yield (lambda c, rows=rows: c.upsert(**rows))  # type: ignore[misc]

    def _update(self, records: Sequence[Record]) -> Op[None]:
        for record in records:
            if (yield from self._get(record.id)) is None:
                raise VectorStoreError(f"no record {record.id} to update")
        kept = [r for r in records if r.vector is None]
        if kept:  # Chroma re-embeds a changed document without embeddings: pass the stored ones
            found = yield (lambda c: c.get(ids=[r.id for r in kept], include=["embeddings"]))
            stored = dict(zip(found["ids"], found["embeddings"], strict=True))
            kept = [r.with_vector(np.asarray(stored[r.id], dtype=np.float32)) for r in kept]
        with_vectors = [r for r in records if r.vector is not None]
        for rows in self._chunks([*with_vectors, *kept]):
            yield (lambda c, rows=rows: c.update(**rows))  # type: ignore[misc]

    def _delete(self, ids: Sequence[str]) -> Op[None]:
        for start in range(0, len(ids), _BATCH):
            chunk = builtins.list(ids[start:start + _BATCH])
            yield (lambda c, chunk=chunk: c.delete(ids=chunk))  # type: ignore[misc]

    def _reset(self) -> Op[None]:
        ids = yield from self._ids(None)
        yield from self._delete(ids)

    def _get(self, id: str) -> Op[Record | None]:
        result = yield (lambda c: c.get(ids=[id], include=["metadatas"]))
        if not result["ids"]:
            return None
        return decode_record(result["ids"][0], result["metadatas"][0])

    def _fetch(self, ids: builtins.list[str]) -> Op[builtins.list[Record]]:
        if not ids:
            return []
        result = yield (lambda c: c.get(ids=ids, include=["metadatas"]))
        by_id = {i: decode_record(i, m) for i, m in zip(result["ids"], result["metadatas"],
                                                         strict=True)}
        return [by_id[i] for i in ids if i in by_id]

    def _search(self, vector: Vector, limit: int, filter: Filter | None) -> Op[builtins.list[Hit]]:
        self._check(vector)
        query = Translated(None, None, True) if filter is None else translate(filter)
        if query.where is _NEVER or limit <= 0:
            return []
        ids: builtins.list[str] | None = None
        if filter is not None and not query.exact:
            ids = [r.id for r in (yield from self._checked(filter, query))]
            if not ids:
                return []
            query, limit = Translated(None, None, True), min(limit, len(ids))
        result = yield (lambda c: c.query(
            query_embeddings=[vector.tolist()], ids=ids, n_results=limit, where=query.where,
            where_document=cast(Any, query.document), include=["metadatas", "distances"],
        ))
        return [
            Hit(decode_record(i, m), cosine_to_score(1.0 - d))
            for i, m, d in zip(result["ids"][0], result["metadatas"][0], result["distances"][0],
                               strict=True)
        ]

    def _list(
        self, filter: Filter | None, limit: int, cursor: str | None, order: Order
    ) -> Op[tuple[builtins.list[Record], str | None]]:
        query = Translated(None, None, True) if filter is None else translate(filter)
        if query.where is _NEVER or limit <= 0:
            return [], None
        if order == "id" and self._bucketed:
            return (yield from self._page_by_buckets(filter, query, limit, cursor))
        if order == "newest" and (cursor is None or _epoch_us(cursor_key(cursor)[0]) is not None):
            return (yield from self._page_by_time(filter, query, limit, cursor))
        if not query.exact:
            assert filter is not None
            return page_after((yield from self._checked(filter, query)), order, cursor, limit)
        if order == "newest":  # Chroma cannot order: the matching records, sorted here
            records = yield from self._fetch((yield from self._ids(filter)))
            return page_after(records, order, cursor, limit)
        ids = [i for i in (yield from self._ids(filter)) if cursor is None or i > cursor]
        page = yield from self._fetch(ids[:limit])
        return page, (ids[limit - 1] if len(ids) > limit else None)

    def _page_by_buckets(self, filter: Filter | None, query: Translated, limit: int,
                         cursor: str | None) -> Op[tuple[builtins.list[Record], str | None]]:
        """A page in id order from the ``id3`` buckets at and after the cursor's."""
        def read(buckets: Where) -> Op[builtins.list[Record]]:
            where = _all([query.where, {"id3": buckets}])
            result = yield (lambda c: c.get(where=where, where_document=cast(Any, query.document),
                                             include=["metadatas"]))
            return [r for r in map(decode_record, result["ids"], result["metadatas"])
                    if (cursor is None or r.id > cursor)
                    and (query.exact or filter is None or matches(filter, r.lookup))]

        found = yield from read({"$eq": _ODD})
        per_bucket = max(1, int((yield (lambda c: c.count())))) / len(BUCKETS)
        start = 0 if cursor is None else bisect_left(BUCKETS, cursor[:3])
        width = math.ceil(1.25 * (limit + 1) / per_bucket)
        while True:
            end = min(len(BUCKETS), start + width)
            if start < end:
                found += yield from read({"$in": BUCKETS[start:end]})
            # every id below the first unread bucket is known
            known = sorted((r for r in found if end == len(BUCKETS) or r.id < BUCKETS[end]),
                           key=lambda r: r.id)
            if len(known) > limit:
                return known[:limit], known[limit - 1].id
            if end == len(BUCKETS):
                return known, None
            start, width = end, 4 * width

    def _page_by_time(self, filter: Filter | None, query: Translated, limit: int,
                      cursor: str | None) -> Op[tuple[builtins.list[Record], str | None]]:
        """Newest first: the ids in a window of creation times below the cursor (ids only),
        widened eight times at a time until it holds a page and one more match (past a year
        wide, down to the oldest record); then the records of that window, sorted. The
        width that sufficed last is where the next page starts."""
        top = None if cursor is None else cursor_key(cursor)
        high = None if top is None else _epoch_us(top[0])
        upper = [] if high is None else [{"t:created_at": {"$lte": high}}]
        width = max(_SECOND_US, self._newest_width // 8)
        while True:
            bottom = width > _YEAR_US
            low = (_now_us() if high is None else high) - width
            window = _all([query.where, *upper,
                           *([] if bottom else [{"t:created_at": {"$gte": low}}])])
            found = yield (lambda c, where=window: c.get(  # type: ignore[misc]
                where=where, where_document=cast(Any, query.document), include=[]))
            if len(found["ids"]) > limit or bottom:
                records = [r for r in (yield from self._fetch(found["ids"]))
                           if (top is None or (r.created_at, r.id) < top)
                           and (query.exact or filter is None or matches(filter, r.lookup))]
                if len(records) > limit or bottom:
                    self._newest_width = width
                    page = sorted(records, key=lambda r: (r.created_at, r.id), reverse=True)
                    return page[:limit], (cursor_of(page[limit - 1], "newest")
                                          if len(page) > limit else None)
            width *= 8

    def _count(self, filter: Filter | None) -> Op[int]:
        if filter is None:
            return int((yield (lambda c: c.count())))
        return len((yield from self._ids(filter)))

    # -- async -----------------------------------------------------------
    async def aclose(self) -> None:
        self.close()
