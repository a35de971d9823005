"""Qdrant: a server (``url``/``api_key`` or ``host``/``port``) or local mode (``path``).

Each point carries the record (``"record"``) and, beside it, an index of its
fields split by type so that every filter means what the reference evaluator
says (:mod:`memkit._filters.evaluate`)::

    n.f  number      b.f  boolean     s.f  string     l.f  lower-cased string
    ln.f numbers of a list   lb.f booleans of a list   ls.f strings of a list
    ll.f lower-cased strings of a list   t.f  timestamps in epoch µs

Qdrant matches a condition on an array if any element matches, and compares
``1`` with ``1.0`` but not with ``true``; keeping scalars and list elements,
numbers and booleans under separate keys turns those quirks into the exact
semantics, and a missing key fails every positive condition, so ``must_not``
is the exact complement. Qdrant's ``Range`` is numeric only: timestamps are
ordered through ``t.f``; an order comparison with a string on any other field
raises :class:`~memkit.FilterError`.

Point ids are the memkit ids when those are canonical UUIDs, and a name-based
UUID of the id otherwise (the id itself is kept in the payload, and such points
are marked ``"aliased"``). Qdrant scrolls in point-id order, which for canonical
UUIDs is memkit's id order: a page in id order is one scroll of the unaliased
points from the cursor, merged with the aliased ones (usually none). Newest-first
pages, and every page of a collection written before the marker existed, sort
the matching ids here.

Keyword search uses a sparse vector per point (hashed term frequencies of the
memory text) with Qdrant's IDF modifier; scores are divided by the best one, so
the top hit scores 1.

Every operation is written once, as a generator that yields client calls
(``lambda c: c.upsert(...)``, type-checked against
:class:`~qdrant_client.QdrantClient`); :class:`~qdrant_client.AsyncQdrantClient`
has the same methods as coroutines, so one driver runs a call synchronously
and one awaits it. Local mode keeps its data inside one client object (and
locks a ``path`` to one client), so a second, async client would see a
different or a locked database; there the async methods run the sync client in
a worker thread. Writes hold one lock per store object, shared by sync and
async writers; separate processes are not serialised against each other
(Qdrant has no transactions): see docs/backends.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from memkit._env import env, env_port
from memkit._errors import ConfigError, FilterError, VectorStoreError
from memkit._filters import BUILTIN_FIELDS, TIME_FIELDS, And, Condition, Filter, Not, Or, Scalar
from memkit._imports import require
from memkit._time import to_datetime
from memkit.stores._driven import arun_calls, run_calls
from memkit.stores._generations import SwitchableStore
from memkit.stores._ops import translated
from memkit.stores._sorted import Page, SortedKeys, Walk, walk
from memkit.stores.base import Hit, Order, Record, Vector, check_collection, cosine_to_score, page_after

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

models: Any = require("qdrant_client.models", "qdrant")

T = TypeVar("T")
Op = Generator[Callable[["QdrantClient"], Any], Any, T]

DENSE = "dense"
SPARSE = "text"
_SCOPE_FIELDS = ("user_id", "agent_id", "run_id")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_]+")
_TOKEN = re.compile(r"\w+")
_PAGE = 1000
_ALIASED = "aliased"  # the point id is a name-based UUID of the memkit id
_UUID_TEMPLATE = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
_HEX = "0123456789abcdef"

# -- payload ---------------------------------------------------------------


def _key(kind: str, field: str) -> str:
    """The JSON path of ``field`` in the index section ``kind``, quoted when needed."""
    return f"{kind}.{field}" if _PLAIN_KEY.fullmatch(field) else f'{kind}."{field}"'


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _epoch_us(value: str) -> int | None:
    try:
        return (to_datetime(value) - _EPOCH) // timedelta(microseconds=1)
    except ValueError:
        return None


def encode_payload(record: Record) -> dict[str, Any]:
    """The point payload of a record: the record itself and its typed field index."""
    index: dict[str, dict[str, Any]] = {
        kind: {} for kind in ("n", "b", "s", "l", "t", "ln", "lb", "ls", "ll")
    }
    fields = {k: v for k, v in record.metadata.items() if k not in BUILTIN_FIELDS}
    fields.update({k: getattr(record, k) for k in BUILTIN_FIELDS})
    for name, value in fields.items():
        if isinstance(value, bool):
            index["b"][name] = value
        elif _is_number(value):
            index["n"][name] = value
        elif isinstance(value, str):
            index["s"][name] = value
            index["l"][name] = value.lower()
            if name in TIME_FIELDS and (micros := _epoch_us(value)) is not None:
                index["t"][name] = micros
        elif isinstance(value, list):
            bools = [v for v in value if isinstance(v, bool)]
            numbers = [v for v in value if _is_number(v)]
            strings = [v for v in value if isinstance(v, str)]
            for kind, items in (("lb", bools), ("ln", numbers), ("ls", strings),
                                ("ll", [s.lower() for s in strings])):
                if items:
                    index[kind][name] = items
    payload: dict[str, Any] = {"id": record.id, "record": record.payload(), **index}
    if _point_id(record.id) != record.id:
        payload[_ALIASED] = True
    return payload


def sparse_vector(text: str, *, query: bool = False) -> Any | None:
    """Hashed term frequencies of ``text`` (``None`` without a word).

    A query counts each of its terms once.
    """
    tokens = _TOKEN.findall(text.lower())
    counts = Counter(int.from_bytes(hashlib.blake2b(t.encode(), digest_size=4).digest(), "big")
                     for t in tokens)
    if not counts:
        return None
    indices = sorted(counts)
    values = [1.0 if query else float(counts[i]) for i in indices]
    return models.SparseVector(indices=indices, values=values)


# -- filters ---------------------------------------------------------------


def _match_none() -> Any:
    return models.Filter(must_not=[models.Filter()])


def _field(key: str, **condition: Any) -> Any:
    return models.FieldCondition(key=key, **condition)


def _any_of(conditions: list[Any]) -> Any:
    return models.Filter(should=conditions) if conditions else _match_none()


def _equal(field: str, value: Scalar, kinds: tuple[str, str, str]) -> Any:
    boolean, number, string = kinds
    if isinstance(value, bool):
        return _field(_key(boolean, field), match=models.MatchValue(value=value))
    if isinstance(value, str):
        return _field(_key(string, field), match=models.MatchValue(value=value))
    return _field(_key(number, field), range=models.Range(gte=value, lte=value))


def _condition(cond: Condition) -> Any:
    field, op, value = cond.field, cond.operator, cond.value
    if op in ("ne", "nin"):
        positive = cond.model_copy(update={"operator": "eq" if op == "ne" else "in"})
        return models.Filter(must_not=[_condition(positive)])
    if op == "eq":
        assert not isinstance(value, tuple)
        return _equal(field, value, ("b", "n", "s"))
    if op == "in":
        assert isinstance(value, tuple)
        strings = [v for v in value if isinstance(v, str)]
        others = [_equal(field, v, ("b", "n", "s")) for v in value if not isinstance(v, str)]
        if strings:
            others.append(_field(_key("s", field), match=models.MatchAny(any=strings)))
        return _any_of(others)
    if op == "contains":
        assert not isinstance(value, tuple)
        element = _equal(field, value, ("lb", "ln", "ls"))
        if not isinstance(value, str):
            return element
        substring = _field(_key("s", field), match=models.MatchSubstring(substring=value))
        return _any_of([substring, element])
    if op == "icontains":
        assert isinstance(value, str)
        needle = value.lower()
        return _any_of([
            _field(_key("l", field), match=models.MatchSubstring(substring=needle)),
            _field(_key("ll", field), match=models.MatchValue(value=needle)),
        ])
    # gt / gte / lt / lte
    bound = {op: value}
    if _is_number(value):
        return _field(_key("n", field), range=models.Range(**bound))
    assert isinstance(value, str)
    if field in TIME_FIELDS and (micros := _epoch_us(value)) is not None:
        return _field(_key("t", field), range=models.Range(**{op: micros}))
    raise FilterError(
        f"qdrant cannot order strings: {field} {op} {value!r} (only timestamps "
        "take a string bound)"
    )


def _node(expr: Filter) -> Any:
    if isinstance(expr, Condition):
        return _condition(expr)
    if isinstance(expr, Not):
        return models.Filter(must_not=[_node(expr.item)])
    if isinstance(expr, And):
        return models.Filter(must=[_node(i) for i in expr.items])
    assert isinstance(expr, Or)
    return _any_of([_node(i) for i in expr.items])


def translate(expr: Filter) -> Any:
    """The Qdrant ``Filter`` selecting exactly the points the reference evaluator accepts."""
    node = _node(expr)
    return node if isinstance(node, models.Filter) else models.Filter(must=[node])


# -- the store -------------------------------------------------------------


_ID_NAMESPACE = uuid.UUID("5b0f3a4e-5a8e-4c1e-9d0c-6d656d6b6974")


def _point_id(id: str) -> str:
    """Qdrant ids are UUIDs: a memkit id that is not one maps to a name-based UUID."""
    try:
        canonical = str(uuid.UUID(id))
    except ValueError:
        return str(uuid.uuid5(_ID_NAMESPACE, id))
    return canonical if canonical == id else str(uuid.uuid5(_ID_NAMESPACE, id))


def _allowed(position: int) -> str:
    return "-" if _UUID_TEMPLATE[position] == "-" else _HEX


def _least_from(position: int) -> str:
    return "".join(_allowed(i)[0] for i in range(position, len(_UUID_TEMPLATE)))


def first_uuid_from(text: str) -> str | None:
    """The least canonical UUID string that is not less than ``text``, or ``None``."""
    size = len(_UUID_TEMPLATE)
    matched = 0
    while matched < min(len(text), size) and text[matched] in _allowed(matched):
        matched += 1
    if matched == len(text):  # a prefix of a UUID, or one
        return text + _least_from(matched)
    # Raise the last position that can go up, then fill the rest with the least characters.
    for i in range(min(matched, size - 1), -1, -1):
        higher = [ch for ch in _allowed(i) if ch > text[i]]
        if higher:
            return text[:i] + higher[0] + _least_from(i + 1)
    return None


def _record(point: Any) -> Record:
    return Record.from_payload(point.payload["id"], point.payload["record"])


class QdrantStore(SwitchableStore):
    """Memories as Qdrant points: a dense cosine vector, a sparse keyword vector, the payload."""

    provider = "qdrant"
    supports_keyword = True
    #: order comparisons with a string bound work on created_at/updated_at only
    unsupported_filters: ClassVar[frozenset[str]] = frozenset({"gt", "gte", "lt", "lte"})

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        path: str | None = None,
        collection_name: str = "memkit",
        host: str | None = None,
        port: int | None = None,
    ) -> None:
        super().__init__()
        qdrant_client = require("qdrant_client", "qdrant")
        if url is None and host is None and path is None:
            url, host = env("QDRANT_URL"), env("QDRANT_HOST")
            if host is not None and port is None:
                port = env_port("QDRANT_PORT")
        self.collection_name = self._live = collection_name
        self._dimension: int | None = None
        self._model = ""
        #: whether the collection marks aliased points (see the module docstring)
        self._marked = False
        # qdrant-client's local mode is not thread-safe; a server client is.
        self._client_lock: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
        #: local mode: the sorted keys of each collection, once a page was listed (shared
        #: with the shadow stores of re-embedding, which write other collections)
        self._sorted: dict[str, SortedKeys] = {}
        self.local = url is None and host is None
        if self.local:
            if path is None or path == ":memory:":
                self._client = qdrant_client.QdrantClient(location=":memory:")
            else:
                self._client = qdrant_client.QdrantClient(path=path)
            self._aclient: Any = None
            self._client_lock = threading.RLock()
        else:
            remote: dict[str, Any] = {"url": url, "host": host,
                                      "api_key": api_key if api_key is not None else env("QDRANT_API_KEY")}
            if port is not None:
                remote["port"] = port
            self._client = qdrant_client.QdrantClient(**remote)
            self._aclient = qdrant_client.AsyncQdrantClient(**remote)
            self.native_async = True

    # -- drivers ---------------------------------------------------------
    def _run(self, op: Op[T]) -> T:
        return run_calls(op, self._client, "qdrant", self._client_lock)

    async def _arun(self, op: Op[T]) -> T:
        if self._aclient is None:
            return await asyncio.to_thread(self._run, op)
        return await arun_calls(op, self._aclient, "qdrant")

    # -- operations ------------------------------------------------------
    def _open(self, dimension: int, model: str) -> Op[None]:
        name = self.collection_name
        meta = {"memkit": {"dimension": dimension, "model": model, _ALIASED: True}}
        if not (yield (lambda c: c.collection_exists(collection_name=name))):
            yield (lambda c: c.create_collection(
                collection_name=name,
                vectors_config={DENSE: models.VectorParams(
                    size=dimension, distance=models.Distance.COSINE)},
                sparse_vectors_config={SPARSE: models.SparseVectorParams(
                    modifier=models.Modifier.IDF)},
                metadata=meta,
            ))
            if not self.local:  # local mode has no payload indexes
                for field in _SCOPE_FIELDS:
                    key = _key("s", field)
                    yield (lambda c, key=key: c.create_payload_index(  # type: ignore[misc]
                        collection_name=name, field_name=key,
                        field_schema=models.PayloadSchemaType.KEYWORD,
                    ))
                yield (lambda c: c.create_payload_index(
                    collection_name=name, field_name=_ALIASED,
                    field_schema=models.PayloadSchemaType.BOOL,
                ))
            self._marked = True
        else:
            info = yield (lambda c: c.get_collection(collection_name=name))
            stored = (info.config.metadata or {}).get("memkit")
            if not isinstance(stored, dict):
                raise ConfigError(f"qdrant collection {name!r} was not created by memkit")
            check_collection(name, (stored.get("dimension"), stored.get("model")), dimension, model)
            self._live = stored.get("live") or name
            self._marked = stored.get(_ALIASED) is True
        self._dimension, self._model = dimension, model

    def _point_to(self, shadow: SwitchableStore) -> Op[None]:
        assert isinstance(shadow, QdrantStore)
        meta = {"dimension": shadow._dimension, "model": shadow._model, "live": shadow._live,
                _ALIASED: shadow._marked}
        yield (lambda c: c.update_collection(collection_name=self.collection_name,
                                             metadata={"memkit": meta}))
        self._marked = shadow._marked

    def _drop(self, name: str) -> Op[None]:
        self._sorted.pop(name, None)
        if (yield (lambda c: c.collection_exists(collection_name=name))):
            yield (lambda c: c.delete_collection(collection_name=name))

    def _keys_put(self, records: Sequence[Record]) -> None:
        """Before a write: a key of a write that then fails only costs a page a lookup."""
        if (keys := self._sorted.get(self._live)) is not None:
            keys.put((r.id, r.created_at) for r in records)

    def _check(self, vector: Vector) -> None:
        if self._dimension is not None and vector.shape != (self._dimension,):
            raise VectorStoreError(
                f"vector has shape {vector.shape}, the collection holds "
                f"{self._dimension} dimensions"
            )

    def _vectors(self, record: Record) -> dict[str, Any]:
        assert record.vector is not None
        self._check(record.vector)
        vectors: dict[str, Any] = {DENSE: record.vector.tolist()}
        if (terms := sparse_vector(record.memory)) is not None:
            vectors[SPARSE] = terms
        return vectors

    def _point(self, record: Record) -> Any:
        id = _point_id(record.id)
        if record.vector is None:
            raise VectorStoreError(f"record {record.id} has no vector")
        return models.PointStruct(
            id=id, vector=self._vectors(record), payload=encode_payload(record)
        )

    def _insert(self, records: Sequence[Record]) -> Op[None]:
        points = [self._point(r) for r in records]
        self._keys_put(records)
        for start in range(0, len(points), _PAGE):
            chunk = points[start:start + _PAGE]
            yield (lambda c, chunk=chunk: c.upsert(  # type: ignore[misc]
                collection_name=self._live, points=chunk, wait=True))

    def _update(self, records: Sequence[Record]) -> Op[None]:
        for record in records:
            yield from self._update_one(record)

    def _update_one(self, record: Record) -> Op[None]:
        name = self._live
        if (yield from self._get(record.id)) is None:
            raise VectorStoreError(f"no record {record.id} to update")
        if record.vector is not None:
            yield from self._insert([record])
            return
        id = _point_id(record.id)
        self._keys_put([record])
        yield (lambda c: c.overwrite_payload(collection_name=name, points=[id],
                                     payload=encode_payload(record), wait=True))
        terms = sparse_vector(record.memory)
        if terms is None:
            yield (lambda c: c.delete_vectors(collection_name=name, points=[id],
                                      vectors=[SPARSE], wait=True))
        else:
            yield (lambda c: c.update_vectors(collection_name=name, wait=True, points=[
                models.PointVectors(id=id, vector={SPARSE: terms})]))

    def _delete(self, ids: Sequence[str]) -> Op[None]:
        points = [_point_id(i) for i in ids]
        if points:
            yield (lambda c: c.delete(collection_name=self._live,
                              points_selector=models.PointIdsList(points=points), wait=True))
        if (keys := self._sorted.get(self._live)) is not None:  # after: a failed delete keeps them
            keys.remove(ids)

    def _reset(self) -> Op[None]:
        yield (lambda c: c.delete(collection_name=self._live,
                          points_selector=models.FilterSelector(filter=models.Filter()),
                          wait=True))
        self._sorted.pop(self._live, None)

    def _get(self, id: str) -> Op[Record | None]:
        points = yield (lambda c: c.retrieve(collection_name=self._live, ids=[_point_id(id)],
                                     with_payload=True, with_vectors=False))
        return _record(points[0]) if points else None

    def _query(self, query: Any, using: str, limit: int, filter: Filter | None) -> Op[list[Any]]:
        response = yield (lambda c: c.query_points(
            collection_name=self._live, query=query, using=using,
            query_filter=None if filter is None else translate(filter), limit=limit,
            with_payload=True, with_vectors=False,
        ))
        return list(response.points)

    def _search(self, vector: Vector, limit: int, filter: Filter | None) -> Op[list[Hit]]:
        self._check(vector)
        points = yield from self._query(vector.tolist(), DENSE, limit, filter)
        return [Hit(_record(p), cosine_to_score(p.score)) for p in points]

    def _keyword_search(self, text: str, limit: int, filter: Filter | None) -> Op[list[Hit]]:
        terms = sparse_vector(text, query=True)
        if terms is None:
            return []
        points = yield from self._query(terms, SPARSE, limit, filter)
        top = max((p.score for p in points), default=0.0)
        return [Hit(_record(p), max(0.0, p.score) / top if top > 0 else 0.0) for p in points]

    def _scan(self, scroll_filter: Any, with_payload: Any) -> Op[list[Any]]:
        """Every point matching ``scroll_filter``."""
        found: list[Any] = []
        offset: Any = None
        while True:
            points, offset = yield (lambda c: c.scroll(
                collection_name=self._live, scroll_filter=scroll_filter,
                limit=10 * _PAGE, offset=offset,  # noqa: B023 - called at once
                with_payload=with_payload, with_vectors=False,
            ))
            found.extend(points)
            if offset is None:
                return found

    def _list(
        self, filter: Filter | None, limit: int, cursor: str | None, order: Order
    ) -> Op[tuple[list[Record], str | None]]:
        if self.local:
            if filter is not None:
                translate(filter)  # what Qdrant cannot filter raises here as in a search
            known = yield from self._keys()
            return (yield from self._read(walk(known, filter, limit, cursor, order)))
        if order == "id" and self._marked:
            return (yield from self._page_in_id_order(filter, limit, cursor))
        # Collect the matching ids (and creation times), sort, fetch one page.
        points = yield from self._scan(None if filter is None else translate(filter),
                                       ["id", "record.created_at"])
        keys = [Record(id=p.payload["id"], memory="", hash="", updated_at="",
                       created_at=p.payload["record"]["created_at"]) for p in points]
        wanted, next_cursor = page_after(keys, order, cursor, limit)
        if not wanted:
            return [], None
        points = yield (lambda c: c.retrieve(collection_name=self._live,
                                             ids=[_point_id(r.id) for r in wanted],
                                             with_payload=True, with_vectors=False))
        by_id = {r.id: r for r in map(_record, points)}
        return [by_id[r.id] for r in wanted if r.id in by_id], next_cursor

    def _keys(self) -> Op[SortedKeys]:
        """Local mode: the collection's sorted keys, from one scan the first time."""
        live = self._live
        if live not in self._sorted:
            points = yield from self._scan(None, ["id", "record.created_at"])
            self._sorted.setdefault(live, SortedKeys(
                (p.payload["id"], p.payload["record"]["created_at"]) for p in points))
        return self._sorted[live]

    def _read(self, pages: Walk) -> Op[Page]:
        """Drive a page walk (:func:`memkit.stores._sorted.walk`) with retrieves by id."""
        def retrieve(ids: list[str]) -> Callable[[QdrantClient], Any]:
            return lambda c: c.retrieve(collection_name=self._live, ids=[_point_id(i) for i in ids],
                                        with_payload=True, with_vectors=False)

        return (yield from translated(pages, retrieve, lambda points: [_record(p) for p in points]))

    def _page_in_id_order(
        self, filter: Filter | None, limit: int, cursor: str | None
    ) -> Op[tuple[list[Record], str | None]]:
        """One scroll of the unaliased points from the cursor, merged with the aliased ones."""
        aliased = models.FieldCondition(key=_ALIASED, match=models.MatchValue(value=True))
        matching = [] if filter is None else [translate(filter)]
        start = None if cursor is None else first_uuid_from(cursor)
        found: list[Any] = []
        if cursor is None or start is not None:
            # the cursor's own point may come back too: one more than a page and one
            found, _ = yield (lambda c: c.scroll(
                collection_name=self._live,
                scroll_filter=models.Filter(must=matching or None, must_not=[aliased]),
                limit=limit + 2, offset=start, with_payload=True, with_vectors=False,
            ))
        found += yield from self._scan(models.Filter(must=[*matching, aliased]), True)
        records = sorted((r for r in map(_record, found) if cursor is None or r.id > cursor),
                         key=lambda r: r.id)
        page = records[:limit]
        return page, (page[-1].id if len(records) > limit and page else None)

    def _count(self, filter: Filter | None) -> Op[int]:
        result = yield (lambda c: c.count(collection_name=self._live, exact=True,
                                  count_filter=None if filter is None else translate(filter)))
        return int(result.count)

    # -- sync ------------------------------------------------------------
    def open(self, dimension: int, model: str) -> None:
        self._run(self._open(dimension, model))

    def close(self) -> None:
        self._client.close()

    # -- async -----------------------------------------------------------
    async def aopen(self, dimension: int, model: str) -> None:
        await self._arun(self._open(dimension, model))

    async def aclose(self) -> None:
        if self._aclient is not None:
            await self._aclient.close()
        self.close()
