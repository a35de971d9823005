"""Redis with its search module (RediSearch 2.4+, built into Redis 8): vector search over hashes.

A collection ``name`` is a search index ``memkit:<name>`` over the hashes
``memkit:<name>:<id>``; each hash holds the record as JSON (``record``), its
float32 vector (``vector``, a FLAT cosine field: exact search) and the scope
fields as TAG fields. A hash ``memkit:<name>`` remembers the dimension and the
model (and, after a re-embedding, the generation that is live).

RediSearch's query language cannot say what memkit's filters say (missing
fields, types, substrings, list elements), so a filter is split: the
conditions on ``user_id``, ``agent_id``, ``run_id`` that are plain equalities
at the top of the filter go to the engine as TAG queries (:func:`pushdown`);
every record they select is then checked against the whole filter by the
reference evaluator. A filtered search asks for more nearest neighbours until
``limit`` of them pass or none are left, so it returns ``limit`` hits whenever
that many match. ``list`` and ``count`` read every record the pushed-down part
selects: O(matches) a page. The async methods run in a worker thread; writes
hold the store's lock (no transactions across processes).
"""

from __future__ import annotations

import builtins
import copy
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from memkit._env import env
from memkit._errors import VectorStoreError
from memkit._filters import And, Condition, Filter, matches
from memkit._imports import require
from memkit.stores._generations import next_generation
from memkit.stores.base import Hit, Order, Record, Vector, VectorStore, check_collection, cosine_to_score, page_after

_SCOPES = ("user_id", "agent_id", "run_id")
#: TAG values memkit sends to the engine; others are checked in Python only
_PLAIN = re.compile(r"[A-Za-z0-9_\-.@:]{1,200}")
_TAG_ESCAPE = re.compile(r"([^A-Za-z0-9_])")
_PAGE = 1000


def pushdown(filter: Filter | None) -> str:
    """A RediSearch query selecting every record ``filter`` accepts (and maybe more)."""
    conditions = filter.items if isinstance(filter, And) else (filter,) if filter else ()
    parts = [f"@{c.field}:{{{_tag(c.value)}}}" for c in conditions
             if isinstance(c, Condition) and c.field in _SCOPES and c.operator == "eq"
             and isinstance(c.value, str) and _PLAIN.fullmatch(c.value)]
    return " ".join(parts) or "*"


def _tag(value: str) -> str:
    """``value`` as a TAG query term: every character but letters, digits and ``_`` escaped."""
    return _TAG_ESCAPE.sub(lambda m: "\\" + m.group(1), value)


class RedisStore(VectorStore):
    """Memories as Redis hashes under a RediSearch index with a FLAT cosine vector field.

    >>> store = RedisStore("redis://localhost:6379")
    >>> store.open(dimension=384, model="all-MiniLM-L6-v2")
    """

    provider: ClassVar[str] = "redis"

    def __init__(self, url: str | None = None, collection_name: str = "memkit") -> None:
        super().__init__()
        redis = require("redis", "redis")
        self.url = url or env("REDIS_URL") or "redis://localhost:6379"
        self.collection_name = self._live = collection_name
        self._client: Any = redis.Redis.from_url(self.url)
        self._dimension: int | None = None

    # -- names -------------------------------------------------------------
    def _meta(self) -> str:
        return f"memkit:{self.collection_name}"

    def _index(self, live: str | None = None) -> str:
        return f"memkit:{live or self._live}"

    def _key(self, id: str, live: str | None = None) -> str:
        return f"memkit:{live or self._live}:{id}"

    def _call(self, *args: Any) -> Any:
        try:
            return self._client.execute_command(*args)
        except Exception as exc:
            raise VectorStoreError(f"redis {args[0]}: {exc}") from exc

    # -- lifecycle -------------------------------------------------------
    def open(self, dimension: int, model: str) -> None:
        meta = {k.decode(): v.decode() for k, v in self._call("HGETALL", self._meta()).items()}
        if meta:
            check_collection(self.collection_name, (int(meta["dimension"]), meta["model"]), dimension, model)
            self._live = meta.get("live") or self.collection_name
        else:
            self._call("HSET", self._meta(), "dimension", dimension, "model", model,
                       "live", self._live)
        self._dimension = dimension
        self._create_index(self._live, dimension)

    def _create_index(self, live: str, dimension: int) -> None:
        tags = [a for s in _SCOPES for a in (s, "TAG", "CASESENSITIVE", "SEPARATOR", "\x1f")]
        try:
            self._client.execute_command(
                "FT.CREATE", self._index(live), "ON", "HASH", "PREFIX", 1, self._key("", live),
                "SCHEMA", "id", "TAG", "CASESENSITIVE", "SEPARATOR", "\x1f", "SORTABLE", *tags,
                "vector", "VECTOR", "FLAT", 6, "TYPE", "FLOAT32", "DIM", dimension,
                "DISTANCE_METRIC", "COSINE")
        except Exception as exc:
            if "already exists" not in str(exc):  # another client (or an earlier open) made it
                raise VectorStoreError(f"redis FT.CREATE: {exc}") from exc

    def close(self) -> None:
        self._client.close()

    def reset(self) -> None:
        self._drop(self._live)
        assert self._dimension is not None
        self._create_index(self._live, self._dimension)

    def _drop(self, live: str) -> None:
        try:
            self._client.execute_command("FT.DROPINDEX", self._index(live), "DD")
        except Exception as exc:
            if "unknown index" not in str(exc).lower():  # (a missing index is dropped already)
                raise VectorStoreError(f"redis FT.DROPINDEX: {exc}") from exc

    # -- re-embedding ------------------------------------------------------
    def shadow(self, dimension: int, model: str) -> RedisStore:
        shadow = copy.copy(self)
        shadow.collection_name = shadow._live = next_generation(self.collection_name, self._live)
        self._drop(shadow._live)  # what an interrupted re-embedding left
        self._call("DEL", shadow._meta())
        shadow.open(dimension, model)
        return shadow

    def switch(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, RedisStore)
        meta = {k.decode(): v.decode() for k, v in self._call("HGETALL", shadow._meta()).items()}
        self._call("HSET", self._meta(), "dimension", meta["dimension"], "model", meta["model"],
                   "live", shadow._live)
        self._call("DEL", shadow._meta())
        self._drop(self._live)
        self._live, self._dimension = shadow._live, shadow._dimension

    def discard(self, shadow: VectorStore) -> None:
        assert isinstance(shadow, RedisStore)
        self._drop(shadow._live)
        self._call("DEL", shadow._meta())

    # -- writes ----------------------------------------------------------
    def _blob(self, vector: Vector) -> bytes:
        if vector.shape != (self._dimension,):
            raise VectorStoreError(
                f"vector has shape {vector.shape}, the collection holds {self._dimension} dimensions")
        return np.asarray(vector, np.float32).tobytes()

    def _fields(self, record: Record) -> dict[str, Any]:
        fields: dict[str, Any] = {"id": record.id,
                                  "record": json.dumps(record.payload(), ensure_ascii=False)}
        for scope in _SCOPES:
            value = getattr(record, scope)
            fields[scope] = value if value is not None else ""
        if record.vector is not None:
            fields["vector"] = self._blob(record.vector)
        return fields

    def insert(self, records: Sequence[Record]) -> None:
        for record in records:
            if record.vector is None:
                raise VectorStoreError(f"record {record.id} has no vector")
        fields = [self._fields(r) for r in records]
        self._write([(self._key(r.id), f) for r, f in zip(records, fields, strict=True)])

    def update(self, records: Sequence[Record]) -> None:
        fields = [self._fields(r) for r in records]
        pipe = self._client.pipeline(transaction=False)
        for record in records:
            pipe.exists(self._key(record.id))
        for record, found in zip(records, self._run(pipe), strict=True):
            if not found:
                raise VectorStoreError(f"no record {record.id} to update")
        self._write([(self._key(r.id), f) for r, f in zip(records, fields, strict=True)])

    def _write(self, items: builtins.list[tuple[str, dict[str, Any]]]) -> None:
        for start in range(0, len(items), _PAGE):
            pipe = self._client.pipeline(transaction=True)
            for key, fields in items[start:start + _PAGE]:
                pipe.hset(key, mapping=fields)
            self._run(pipe)

    def _run(self, pipe: Any) -> builtins.list[Any]:
        try:
            return list(pipe.execute())
        except Exception as exc:
            raise VectorStoreError(f"redis: {exc}") from exc

    def delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), _PAGE):
            chunk = ids[start:start + _PAGE]
            if chunk:
                self._call("DEL", *(self._key(id) for id in chunk))

    # -- reads -----------------------------------------------------------
    def get(self, id: str) -> Record | None:
        payload = self._call("HGET", self._key(id), "record")
        return None if payload is None else Record.from_payload(id, json.loads(payload))

    def _record(self, key: bytes | str, payload: bytes | str) -> Record:
        key = key.decode() if isinstance(key, bytes) else key
        return Record.from_payload(key[len(self._key("")):], json.loads(payload))

    def search(self, vector: Vector, limit: int, filter: Filter | None = None) -> builtins.list[Hit]:
        blob = self._blob(vector)
        if limit <= 0:
            return []
        query = pushdown(filter)
        total = self._total(query)
        k = min(limit if filter is None else max(4 * limit, 64), total)
        while k > 0:
            reply = self._call(
                "FT.SEARCH", self._index(), f"({query})=>[KNN {k} @vector $vec AS dist]",
                "PARAMS", 2, "vec", blob, "SORTBY", "dist", "RETURN", 2, "record", "dist",
                "LIMIT", 0, k, "DIALECT", 2)
            hits = []
            for key, fields in _documents(reply):
                record = self._record(key, fields[b"record"])
                if matches(filter, record.lookup):
                    hits.append(Hit(record, cosine_to_score(1.0 - float(fields[b"dist"]))))
            if len(hits) >= limit or k >= total:
                return hits[:limit]
            k = min(4 * k, total)
        return []

    def _total(self, query: str) -> int:
        return _total(self._call("FT.SEARCH", self._index(), query, "LIMIT", 0, 0, "DIALECT", 2))

    def _matching(self, filter: Filter | None) -> Iterator[Record]:
        query, offset = pushdown(filter), 0
        while True:
            reply = self._call("FT.SEARCH", self._index(), query, "RETURN", 1, "record",
                               "SORTBY", "id", "LIMIT", offset, _PAGE, "DIALECT", 2)
            documents = _documents(reply)
            for key, fields in documents:
                record = self._record(key, fields[b"record"])
                if matches(filter, record.lookup):
                    yield record
            if len(documents) < _PAGE:
                return
            offset += _PAGE

    def list(
        self, filter: Filter | None = None, limit: int = 100, cursor: str | None = None,
        order: Order = "id",
    ) -> tuple[builtins.list[Record], str | None]:
        return page_after(builtins.list(self._matching(filter)), order, cursor, max(limit, 0))

    def count(self, filter: Filter | None = None) -> int:
        return sum(1 for _ in self._matching(filter))


def _documents(reply: Any) -> builtins.list[tuple[bytes, dict[bytes, bytes]]]:
    """``FT.SEARCH``'s documents as ``(key, fields)``: from a map (the search module's
    RESP3-shaped answer) or from RESP2's flat list (total, key, fields, key, fields, ...)."""
    if isinstance(reply, dict):
        return [(r[b"id"], r[b"extra_attributes"]) for r in reply[b"results"]]
    return [(reply[i], dict(zip(reply[i + 1][::2], reply[i + 1][1::2], strict=True)))
            for i in range(1, len(reply), 2)]


def _total(reply: Any) -> int:
    return int(reply[b"total_results"] if isinstance(reply, dict) else reply[0])
