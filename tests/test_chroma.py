"""Chroma-specific behaviour: translation of the tricky forms, persistence, the server."""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np
import pytest

pytest.importorskip("chromadb")

from memkit._errors import ConfigError
from memkit._filters import condition, parse_filter
from memkit._time import to_iso
from memkit.stores._chroma_where import encode_metadata, translate
from memkit.stores.base import Record
from memkit.stores.chroma import ChromaStore
from tests.conftest import unique_name

pytestmark = pytest.mark.engine  # a store library beyond memory and SQLite


def _record(memory: str = "Hello world", **metadata: object) -> Record:
    stamp = "2024-01-02T00:00:00.000000+00:00"
    return Record(
        id=str(uuid.uuid4()), memory=memory, hash=memory, user_id="u1", created_at=stamp,
        updated_at=stamp, metadata=dict(metadata),
        vector=np.array([1.0, 0.0, 0.0], dtype=np.float32),
    )


def _ids(store: ChromaStore, spec: dict[str, object]) -> set[str]:
    return {r.id for r in store.list(parse_filter(spec), limit=1000)[0]}


@pytest.fixture
def store(tmp_path: Path) -> ChromaStore:
    s = ChromaStore(path=str(tmp_path), collection_name="unit")
    s.open(3, "m")
    return s


def test_numbers_are_floats_and_lists_are_split_by_type() -> None:
    meta = encode_metadata(_record(n=2, tags=["A", 1, True]))
    assert meta["n:n"] == 2.0 and isinstance(meta["n:n"], float)
    assert (meta["ls:tags"], meta["ll:tags"], meta["ln:tags"], meta["lb:tags"]) == (
        ["A"], ["a"], [1.0], [True]
    )
    assert "n:tags" not in meta["has"] and "n:n" in meta["has"]


def test_negation_is_pushed_to_the_leaves() -> None:
    where, document, _ = translate(parse_filter({"NOT": {"OR": [{"a": 1}, {"b": {"gt": 2}}]}}))
    assert document is None
    assert where == {"$and": [
        {"n:a": {"$ne": 1.0}},
        {"$or": [{"has": {"$not_contains": "n:b"}}, {"n:b": {"$lte": 2.0}}]},
    ]}


def test_memory_substrings_go_to_the_document() -> None:
    where, document, exact = translate(
        parse_filter({"memory": {"contains": "wor"}, "user_id": "u1"}))
    assert (where, document, exact) == ({"s:user_id": {"$eq": "u1"}}, {"$contains": "wor"}, True)


def test_what_chroma_cannot_say_widens_the_query_and_is_checked() -> None:
    either = translate(parse_filter({"OR": [{"memory": {"contains": "x"}}, {"a": 1}]}))
    assert either == (None, None, False)
    ordered = translate(parse_filter({"AND": [condition("name", "gte", "b"), {"a": 1}]}))
    assert ordered == ({"n:a": {"$eq": 1.0}}, None, False)


def test_filters_match_the_reference(store: ChromaStore) -> None:
    one, float_one, true, listed, missing = (
        _record(n=1), _record(n=1.0), _record(n=True), _record(n=["x", 1]), _record()
    )
    store.insert([one, float_one, true, listed, missing])
    assert _ids(store, {"n": 1}) == {one.id, float_one.id}
    assert _ids(store, {"n": {"ne": 1}}) == {true.id, listed.id, missing.id}
    assert _ids(store, {"n": {"contains": 1}}) == {listed.id}
    assert _ids(store, {"NOT": {"n": {"gt": 0.5}}}) == {true.id, listed.id, missing.id}
    assert _ids(store, {"n": {"in": []}}) == set()
    assert _ids(store, {"memory": {"contains": "lo w"}}) == {r.id for r in (
        one, float_one, true, listed, missing)}


def test_substrings_of_any_field_are_exact(store: ChromaStore) -> None:
    short, long, other = _record(s="abcdef"), _record("Long", s="x" * 40 + "CDE"), _record(s=3)
    store.insert([short, long, other])
    assert _ids(store, {"s": {"icontains": "CDE"}}) == {short.id, long.id}
    assert _ids(store, {"NOT": {"s": {"contains": "CDE"}}}) == {short.id, other.id}
    assert store.count(parse_filter({"memory": {"icontains": "LONG"}})) == 1
    hits = store.search(np.array([1.0, 0.0, 0.0], dtype=np.float32), limit=5,
                        filter=parse_filter({"s": {"contains": "x" * 30}}))
    assert [h.record.id for h in hits] == [long.id]


def _walk(store: ChromaStore, spec: dict[str, int] | None, size: int,
          order: Literal["id", "newest"] = "id") -> list[str]:
    """Every id ``list`` pages out, ``size`` at a time, following the cursors."""
    ids: list[str] = []
    cursor = None
    while True:
        page, cursor = store.list(None if spec is None else parse_filter(spec), limit=size,
                                  cursor=cursor, order=order)
        ids += [r.id for r in page]
        if cursor is None:
            return ids


def test_pages_are_in_id_order(store: ChromaStore) -> None:
    others = ["a", "abcdefg1", "abcdefg0", "abcdefg", "é", "日本", "~", "0"]
    records = [_record(f"m{i}", k=i % 3) for i in range(11)]
    records += [replace(_record(f"o{i}", k=i % 3), id=id) for i, id in enumerate(others)]
    store.insert(records)
    for size, spec in [(1, None), (3, None), (100, None), (2, {"k": 1}), (2, {"k": 9})]:
        ids = _walk(store, spec, size)
        wanted = [r for r in records if spec is None or r.metadata["k"] == spec["k"]]
        assert ids == sorted(r.id for r in wanted)


def test_newest_pages_cross_dense_seconds_sparse_years_and_the_future(store: ChromaStore) -> None:
    dense = [to_iso(1_700_000_000 + i) for i in range(150)]  # one a second
    sparse = [to_iso(f"{year}-03-01T00:00:00+00:00") for year in (1999, 2003, 2011)]
    stamps = [*dense, *sparse, to_iso("2100-01-01T00:00:00+00:00"), dense[7], dense[7]]
    records = [replace(_record(f"t{i}", k=i % 4), created_at=stamp)
               for i, stamp in enumerate(stamps)]
    store.insert(records)
    for size, spec in [(7, None), (40, None), (3, {"k": 2}), (1000, None)]:
        ids = _walk(store, spec, size, "newest")
        wanted = [r for r in records if spec is None or r.metadata["k"] == spec["k"]]
        assert ids == [r.id for r in sorted(wanted, key=lambda r: (r.created_at, r.id),
                                            reverse=True)]


def test_a_collection_written_before_id_buckets_still_pages_every_record(tmp_path: Path) -> None:
    records = [_record(f"m{i}", k=i % 2) for i in range(12)]
    old = ChromaStore(path=str(tmp_path), collection_name="old")
    collection = old.client.create_collection(  # as memkit made it before the id3 buckets
        "old", embedding_function=None,
        metadata={"hnsw:space": "cosine", "memkit:dimension": 3, "memkit:model": "m"})
    collection.add(ids=[r.id for r in records], embeddings=[[1.0, 0.0, 0.0]] * len(records),
                   metadatas=[{k: v for k, v in encode_metadata(r).items() if k != "id3"}
                              for r in records],
                   documents=[r.memory for r in records])
    old.open(3, "m")
    for size, spec in [(5, None), (2, {"k": 1})]:
        ids = _walk(old, spec, size)
        assert ids == sorted(r.id for r in records if spec is None or r.metadata["k"] == 1)
    new = [_record("new")]
    old.insert(new)
    assert new[0].id in {r.id for r in old.list(limit=100)[0]}


def test_persists_and_checks_dimension(tmp_path: Path) -> None:
    store = ChromaStore(path=str(tmp_path), collection_name="persist")
    store.open(3, "m")
    record = _record(tag="a")
    store.insert([record])
    store.close()
    reopened = ChromaStore(path=str(tmp_path), collection_name="persist")
    reopened.open(3, "m")
    assert reopened.get(record.id) == record.with_vector(None)
    with pytest.raises(ConfigError, match="3-dimensional"):
        reopened.open(4, "m")


def test_short_collection_names_are_refused() -> None:
    with pytest.raises(ConfigError):
        ChromaStore(collection_name="ab")


async def test_server_native_async(chroma_url: str) -> None:
    store = ChromaStore(url=chroma_url, collection_name=unique_name("chroma_async"))
    try:
        await store.aopen(3, "m")
        record = _record(tag=["a"])
        store.insert([record])
        assert await store.aget(record.id) == record.with_vector(None)
        assert await store.acount(parse_filter({"tag": {"contains": "a"}})) == 1
        hits = await store.asearch(np.array([1.0, 0.0, 0.0], dtype=np.float32), limit=2)
        assert [h.record.id for h in hits] == [record.id]
        assert hits[0].score == pytest.approx(1.0)
    finally:
        store._client.delete_collection(store.collection_name)
