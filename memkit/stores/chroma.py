"""Chroma: embedded (``path``, or in memory) or a server (``host``/``port`` or ``url``).

memkit always passes its own embeddings (the collection has no embedding
function, so Chroma never downloads a model) and telemetry is off.

Each record's Chroma metadata holds the record as JSON and a typed index of its
fields, and filters become Chroma ``where`` over that index, exactly or as a
superset checked with the reference evaluator
(:mod:`memkit.stores._chroma_where`).

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
import math
from bisect import bisect_left
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlparse

import numpy as np

from memkit._env import env, env_port
from memkit._errors import ConfigError, VectorStoreError
from memkit._filters import Filter, matches
from memkit._imports import require
from memkit.stores._chroma_where import (
    BUCKETS,
    NEVER,
    ODD,
    SECOND_US,
    YEAR_US,
    Translated,
    Where,
    all_of,
    decode_record,
    encode_metadata,
    epoch_us,
    now_us,
    translate,
)
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
_BATCH = 1000


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
        self._newest_width = SECOND_US

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
        if query.where is NEVER:
            return []
        result = yield (lambda c: c.get(where=query.where, where_document=cast(Any, query.document),
                                         include=[]))
        return sorted(result["ids"])

    def _checked(self, filter: Filter, query: Translated) -> Op[builtins.list[Record]]:
        """The records matching ``filter``: the candidates ``query`` selects, checked."""
        if query.where is NEVER:
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
        if query.where is NEVER or limit <= 0:
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
        if query.where is NEVER or limit <= 0:
            return [], None
        if order == "id" and self._bucketed:
            return (yield from self._page_by_buckets(filter, query, limit, cursor))
        if order == "newest" and (cursor is None or epoch_us(cursor_key(cursor)[0]) is not None):
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
            where = all_of([query.where, {"id3": buckets}])
            result = yield (lambda c: c.get(where=where, where_document=cast(Any, query.document),
                                             include=["metadatas"]))
            return [r for r in map(decode_record, result["ids"], result["metadatas"])
                    if (cursor is None or r.id > cursor)
                    and (query.exact or filter is None or matches(filter, r.lookup))]

        found = yield from read({"$eq": ODD})
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
        high = None if top is None else epoch_us(top[0])
        upper = [] if high is None else [{"t:created_at": {"$lte": high}}]
        width = max(SECOND_US, self._newest_width // 8)
        while True:
            bottom = width > YEAR_US
            low = (now_us() if high is None else high) - width
            window = all_of([query.where, *upper,
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
