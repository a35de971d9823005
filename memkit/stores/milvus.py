"""Milvus: Milvus Lite in a local file (``uri="./memkit.db"``) or a server (``uri="http://..."``).

The same code serves both: pymilvus starts Milvus Lite for a ``.db`` URI (one
embedded server per file per process, shared by every client of that file, and
stopped at exit). Each entity holds the id, the cosine vector, the creation
time, the record (JSON) and ``ix``, a JSON object of the typed field slots of
:mod:`memkit.stores._typed`. The collection's consistency level is
``Strong``, so a write is visible to the next read (duplicate detection
depends on it).

Filters become Milvus boolean expressions over ``ix``. Milvus compares a
missing JSON key as unknown, so every leaf is ``exists ix["slot"] and ...``
and ``not`` is the exact complement. Milvus' ``like`` has no escape
character, so ``contains``/``icontains`` with a ``%`` or ``_`` in the value
raise :class:`~memkit.FilterError`; every other filter is exact.

A page in id order is one query: the filter and ``id > cursor``, a limit of
one page and one, and pymilvus' ``iterator`` flag, with which Milvus (Lite
too) returns the rows in primary-key order, so one page crosses the wire.
Milvus Lite (3.x, a Python engine) still evaluates the filter over the whole
collection, and row by row over its in-memory segment (up to 128 MB, the
writes since the last flush), so a page there costs in proportion to the
collection, with a smaller constant. Newest-first pages have no engine order
(Lite ignores ``order_by_fields``): the matching ids and creation times are
fetched and sorted here. Every operation is written once, as a generator
of client calls (``lambda c: c.upsert(...)``); the sync driver runs them on
``MilvusClient``. On a server the async driver awaits them on
``AsyncMilvusClient`` (made on first async use; ``aopen`` runs in a worker
thread, as creating an index through the async client fails on Milvus Lite).
On Milvus Lite, whose server drops the async client's connections with "Too
many pings" now and then, the async methods run the sync client in a worker
thread. There is no keyword search (Milvus' BM25 functions are not used yet).
Writes hold the store's lock (see docs/backends.md).
"""

from __future__ import annotations

import asyncio
import builtins
import json
import threading
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from memkit._errors import ConfigError, FilterError, VectorStoreError
from memkit._filters import Filter, Scalar
from memkit._imports import require
from memkit.stores._driven import arun_calls, run_calls
from memkit.stores._generations import SwitchableStore
from memkit.stores._typed import Dialect, slots, translate
from memkit.stores.base import Hit, Order, Record, Vector, check_collection, cosine_to_score, page_after

if TYPE_CHECKING:
    from pymilvus import MilvusClient

T = TypeVar("T")
Op = Generator[Callable[["MilvusClient"], Any], Any, T]
_PAGE = 1000
_FIELDS = ["id", "record"]


def literal(value: Scalar) -> str:
    """A Milvus literal: strings double-quoted with JSON escapes, numbers as floats."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(float(value))


class Expr(Dialect):
    """Milvus filter expressions over the slots in ``ix``."""

    never = 'id < ""'
    words: ClassVar[dict[str, str]] = {"not": "not", "and": "and", "or": "or"}

    @staticmethod
    def _guarded(slot: str, test: str) -> str:
        return f'(exists ix["{slot}"] and {test})'

    def compare(self, slot: str, op: str, value: Scalar) -> str:
        return self._guarded(slot, f'ix["{slot}"] {op} {literal(value)}')

    def has(self, slot: str, value: Scalar) -> str:
        return self._guarded(slot, f'json_contains_any(ix["{slot}"], [{literal(value)}])')

    def substring(self, slot: str, text: str) -> str:
        if "%" in text or "_" in text:
            raise FilterError(f"milvus cannot match a substring containing '%' or '_': {text!r}")
        return self._guarded(slot, f'ix["{slot}"] like {literal("%" + text + "%")}')


def _ids(ids: Sequence[str]) -> str:
    return "id in [" + ", ".join(literal(i) for i in ids) + "]"


def _record(entity: dict[str, Any]) -> Record:
    return Record.from_payload(entity["id"], entity["record"])


class MilvusStore(SwitchableStore):
    """Memories as Milvus entities: a cosine vector, the record and its typed slots (JSON)."""

    provider = "milvus"
    #: ``contains``/``icontains`` whose value has ``%`` or ``_`` (Milvus' ``like`` cannot escape)
    unsupported_filters: ClassVar[frozenset[str]] = frozenset({"contains", "icontains"})

    def __init__(self, uri: str = "./memkit-milvus.db", token: str | None = None,
                 collection_name: str = "memkit") -> None:
        super().__init__()
        self._opening = threading.Lock()
        self.uri, self.token, self.collection_name = uri, token, collection_name
        self._live, self._model = collection_name, ""
        self._pymilvus: Any = require("pymilvus", "milvus")
        options: dict[str, Any] = {}
        if uri.endswith(".db"):
            # Milvus Lite's gRPC server allows no keepalive pings on an idle connection and
            # answers pymilvus' (every 10 s) with GOAWAY "Too many pings"; it is local anyway.
            options["grpc_options"] = {"grpc.keepalive_time_ms": 2**31 - 1,
                                       "grpc.keepalive_permit_without_calls": False}
        try:
            self._client = self._pymilvus.MilvusClient(uri=uri, token=token or "", **options)
        except Exception as exc:
            raise VectorStoreError(f"milvus: {exc}") from exc
        self._aclient: Any = None  # made on first async use, on the running loop
        self._dimension: int | None = None
        # Milvus Lite answers the async client's keepalive pings with "Too many pings"
        # (GOAWAY) now and then; there the async methods run the sync client in a thread.
        self.local = uri.endswith(".db")
        self.native_async = not self.local

    # -- drivers ---------------------------------------------------------
    def _run(self, op: Op[T]) -> T:
        return run_calls(op, self._client, "milvus")

    async def _arun(self, op: Op[T]) -> T:
        if self.local:
            return await asyncio.to_thread(self._run, op)
        if self._aclient is None:
            try:
                self._aclient = self._pymilvus.AsyncMilvusClient(uri=self.uri, token=self.token or "")
            except Exception as exc:
                raise VectorStoreError(f"milvus: {exc}") from exc
        return await arun_calls(op, self._aclient, "milvus")

    # -- operations ------------------------------------------------------
    def _open(self, dimension: int, model: str) -> Op[None]:
        name = self.collection_name
        if not (yield (lambda c: c.has_collection(collection_name=name))):
            yield (lambda c: c.create_collection(
                collection_name=name, schema=self._schema(dimension),
                index_params=self._index(), consistency_level="Strong",
                properties={"memkit": json.dumps({"dimension": dimension, "model": model})}))
        info = yield (lambda c: c.describe_collection(collection_name=name))
        try:
            stored = json.loads(info.get("properties", {}).get("memkit", "null"))
        except ValueError:
            stored = None
        if not isinstance(stored, dict):
            raise ConfigError(f"milvus collection {name!r} was not created by memkit")
        check_collection(name, (stored.get("dimension"), stored.get("model")), dimension, model)
        self._live = stored.get("live") or name
        self._dimension, self._model = dimension, model

    def _point_to(self, shadow: SwitchableStore) -> Op[None]:
        assert isinstance(shadow, MilvusStore)
        meta = {"dimension": shadow._dimension, "model": shadow._model, "live": shadow._live}
        yield (lambda c: c.alter_collection_properties(
            collection_name=self.collection_name, properties={"memkit": json.dumps(meta)}))

    def _drop(self, name: str) -> Op[None]:
        if (yield (lambda c: c.has_collection(collection_name=name))):
            yield (lambda c: c.drop_collection(collection_name=name))

    def _schema(self, dimension: int) -> Any:
        data_type = self._pymilvus.DataType
        schema = self._pymilvus.MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", data_type.VARCHAR, is_primary=True, max_length=1024)
        schema.add_field("vector", data_type.FLOAT_VECTOR, dim=dimension)
        schema.add_field("created_at", data_type.VARCHAR, max_length=64)
        schema.add_field("record", data_type.JSON)
        schema.add_field("ix", data_type.JSON)
        return schema

    def _index(self) -> Any:
        index = self._pymilvus.MilvusClient.prepare_index_params()
        index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
        return index

    def _reset(self) -> Op[None]:
        yield (lambda c: c.delete(collection_name=self._live, filter='id >= ""'))

    def _check(self, vector: Vector) -> None:
        if vector.shape != (self._dimension,):
            raise VectorStoreError(
                f"vector has shape {vector.shape}, the collection holds {self._dimension} dimensions"
            )

    def _insert(self, records: Sequence[Record]) -> Op[None]:
        rows = []
        for record in records:
            if record.vector is None:
                raise VectorStoreError(f"record {record.id} has no vector")
            self._check(record.vector)
            rows.append({"id": record.id, "vector": record.vector.tolist(),
                         "created_at": record.created_at, "record": record.payload(),
                         "ix": slots(record)})
        for start in range(0, len(rows), _PAGE):
            chunk = rows[start:start + _PAGE]
            yield (lambda c, chunk=chunk: c.upsert(  # type: ignore[misc]
                collection_name=self._live, data=chunk))

    def _update(self, records: Sequence[Record]) -> Op[None]:
        if not records:
            return
        wanted = [r.id for r in records]
        found = yield (lambda c: c.get(collection_name=self._live, ids=wanted,
                                       output_fields=["id", "vector"]))
        old = {entity["id"]: entity["vector"] for entity in found}
        for record in records:
            if record.id not in old:
                raise VectorStoreError(f"no record {record.id} to update")
        yield from self._insert([r if r.vector is not None else
                                 r.with_vector(np.asarray(old[r.id], dtype=np.float32))
                                 for r in records])

    def _delete(self, ids: Sequence[str]) -> Op[None]:
        for start in range(0, len(ids), _PAGE):
            chunk = list(ids[start:start + _PAGE])
            yield (lambda c, chunk=chunk: c.delete(  # type: ignore[misc]
                collection_name=self._live, ids=chunk))

    def _where(self, filter: Filter | None) -> str:
        return 'id >= ""' if filter is None else translate(filter, Expr())

    def _get(self, id: str) -> Op[Record | None]:
        found = yield (lambda c: c.get(collection_name=self._live, ids=[id],
                                       output_fields=_FIELDS))
        return _record(found[0]) if found else None

    def _search(self, vector: Vector, limit: int, filter: Filter | None) -> Op[builtins.list[Hit]]:
        self._check(vector)
        where = self._where(filter)
        # Milvus returns at most 16384 hits per search (its topk limit).
        result = yield (lambda c: c.search(
            collection_name=self._live, data=[vector.tolist()], anns_field="vector",
            limit=min(limit, 16384), filter=where, output_fields=_FIELDS,
            search_params={"metric_type": "COSINE"}))
        return [Hit(_record({"id": hit["id"], "record": hit["entity"]["record"]}),
                    cosine_to_score(float(hit["distance"]))) for hit in result[0]]

    def _list(
        self, filter: Filter | None, limit: int, cursor: str | None, order: Order
    ) -> Op[tuple[builtins.list[Record], str | None]]:
        if limit <= 0:
            return [], None
        if order == "id":
            return (yield from self._page_in_id_order(filter, limit, cursor))
        # A query without a limit returns every match, in no order: sort here.
        where = self._where(filter)
        rows = yield (lambda c: c.query(collection_name=self._live, filter=where,
                                        output_fields=["id", "created_at"]))
        keys = [Record(id=row["id"], memory="", hash="", updated_at="", created_at=row["created_at"])
                for row in rows]
        wanted, next_cursor = page_after(keys, order, cursor, limit)
        if not wanted:
            return [], None
        page = [r.id for r in wanted]
        found = yield (lambda c: c.get(collection_name=self._live, ids=page,
                                       output_fields=_FIELDS))
        by_id = {entity["id"]: _record(entity) for entity in found}
        return [by_id[r.id] for r in wanted if r.id in by_id], next_cursor

    def _page_in_id_order(self, filter: Filter | None, limit: int,
                          cursor: str | None) -> Op[tuple[builtins.list[Record], str | None]]:
        where = self._where(filter)
        if cursor is not None:
            where = f"({where}) and id > {literal(cursor)}"
        # the flag pymilvus' own query iterator sets: rows in primary-key order
        rows = yield (lambda c: c.query(collection_name=self._live, filter=where,
                                        limit=limit + 1, output_fields=_FIELDS, iterator="True"))
        page = [_record(row) for row in rows[:limit]]
        return page, (page[-1].id if len(rows) > limit else None)

    def _count(self, filter: Filter | None) -> Op[int]:
        where = self._where(filter)
        result = yield (lambda c: c.query(collection_name=self._live, filter=where,
                                          output_fields=["count(*)"]))
        return int(result[0]["count(*)"])

    # -- sync and async --------------------------------------------------
    def open(self, dimension: int, model: str) -> None:
        with self._opening:  # two shells on one store object create the collection once
            self._run(self._open(dimension, model))

    async def aopen(self, dimension: int, model: str) -> None:
        # pymilvus' async client cannot create indexes on Milvus Lite; opening is rare.
        await asyncio.to_thread(self.open, dimension, model)

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        if self._aclient is not None:
            await self._aclient.close()
            self._aclient = None
        self.close()
