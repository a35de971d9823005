"""What only the sqlite store promises: one WAL file, shared by processes, atomic with history."""

from __future__ import annotations

import dataclasses
import multiprocessing
import random
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from memkit import ConfigError, StoreError, VectorStoreError
from memkit._filters import parse_filter
from memkit._models import HistoryRecord
from memkit._pipeline.runtime import apply_batch
from memkit.history.sqlite import SQLiteHistory
from memkit.stores import _sqlite_keywords
from memkit.stores._sqlite_sql import record_of, record_row
from memkit.stores.base import Record, WriteBatch
from memkit.stores.memory import InMemoryStore
from memkit.stores.sqlite import SQLiteStore, fts_query, translate
from tests.stores.test_contract import DIM, MODEL, NOW, f, ids, rec, vec


def _store(path: Path, collection: str = "memkit") -> SQLiteStore:
    store = SQLiteStore(str(path), collection_name=collection)
    store.open(DIM, MODEL)
    return store


def _row(memory_id: str, event: str = "ADD", value: str = "v") -> HistoryRecord:
    return HistoryRecord(
        id=f"h-{memory_id}-{event}", memory_id=memory_id, event=event,  # type: ignore[arg-type]
        new_value=value, timestamp=NOW, user_id="alice",
    )


def test_the_file_is_in_wal_mode_with_foreign_keys(tmp_path: Path) -> None:
    store = _store(tmp_path / "m.db")
    conn = store._db.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    store.close()


def test_default_path_expands_home_and_creates_parents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    store = SQLiteStore()
    assert store.path == str(tmp_path / ".memkit" / "memkit.db")
    assert (tmp_path / ".memkit" / "memkit.db").exists()
    store.close()


def test_memory_path_works_and_history_shares_the_file(tmp_path: Path) -> None:
    store = _store(Path(":memory:"))
    store.insert([rec("a")])
    store.history().add([_row("a")])
    assert [h.memory_id for h in store.history().get("a")] == ["a"]
    store.close()


def test_a_second_handle_sees_writes_and_reopening_checks_dimension(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    writer, reader = _store(path), _store(path)
    assert reader.search(vec("a"), limit=5) == []  # builds the matrix before the writes
    writer.insert([rec("a"), rec("b"), rec("c")])
    assert [h.record.id for h in reader.search(vec("a"), limit=1)] == ["a"]
    writer.delete(["a"])
    writer.update([rec("b", "moved", vector=vec("a"))])
    hits = reader.search(vec("a"), limit=3)
    assert [h.record.id for h in hits][:1] == ["b"] and "a" not in {h.record.id for h in hits}
    writer.reset()
    assert reader.search(vec("b"), limit=3) == []
    with pytest.raises(ConfigError, match=r"holds 8-dimensional vectors of 'contract-model'"):
        SQLiteStore(str(path)).open(DIM * 2, MODEL)



def test_a_second_handle_sees_field_and_text_changes_made_without_a_vector(
    tmp_path: Path,
) -> None:
    """The reader checks scopes in RAM and keeps the records it returned: an update of
    the fields or the text alone (no new vector) by another handle reaches both."""
    path = tmp_path / "m.db"
    writer, reader = _store(path), _store(path)
    writer.insert([rec("a", "old text"), rec("b", user_id="bob")])
    alice = f({"user_id": "alice"})
    assert [h.record.memory for h in reader.search(vec("a"), 5, alice)] == ["old text"]
    writer.update([replace(rec("a", "new text", user_id="carol"), vector=None)])  # no new vector
    assert reader.search(vec("a"), 5, alice) == []
    hits = reader.search(vec("a"), 5, f({"user_id": "carol"}))
    assert [(h.record.id, h.record.memory) for h in hits] == [("a", "new text")]
    writer.update([replace(rec("a", "newer text", user_id="carol"), vector=None, valid_to=NOW)])
    assert reader.search(vec("a"), 5, f({"valid_to": {"gt": NOW}})) == []
    assert [h.record.memory for h in reader.search(vec("a"), 5, f({"valid_to": NOW}))] == [
        "newer text"]
    writer.close()
    reader.close()

def _add_in_process(path: str, worker: int, count: int) -> None:
    store = SQLiteStore(path)
    store.open(DIM, MODEL)
    history = store.history()
    for i in range(count):
        memory_id = f"w{worker}-{i:03}"
        batch = WriteBatch(
            adds=[rec(memory_id, f"fact {memory_id}", user_id=f"user{worker}")],
            history=[_row(memory_id)],
            dedup_scope=parse_filter({"user_id": f"user{worker}"}),
        )
        apply_batch(store, history, batch)
        store.search(vec(memory_id), limit=3)
    store.close()


@pytest.mark.slow
def test_four_processes_writing_one_file_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    _store(Path(path)).close()
    observer = _store(Path(path))
    assert observer.count() == 0 and observer.search(vec("x"), limit=1) == []
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_add_in_process, args=(path, w, 40)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
        assert process.exitcode == 0
    assert observer.count() == 160
    history = observer.history()
    for w in range(4):
        memory_id = f"w{w}-039"
        assert [h.record.id for h in observer.search(vec(memory_id), limit=1)] == [memory_id]
        assert [h.event for h in history.get(memory_id)] == ["ADD"]
    assert len(observer.search(vec("q"), limit=500)) == 160
    observer.close()


def test_a_failed_history_write_rolls_back_the_records(tmp_path: Path) -> None:
    store = _store(tmp_path / "m.db")
    store.insert([rec("existing", "old text")])
    history = store.history()

    def crash(records: object) -> None:
        SQLiteHistory.add(history, records)  # type: ignore[arg-type]
        raise RuntimeError("crash between history and commit")

    history.add = crash  # type: ignore[method-assign]
    batch = WriteBatch(
        adds=[rec("new", "new text")], updates=[rec("existing", "changed", vector=None)],
        deletes=[], history=[_row("new"), _row("existing", "UPDATE")],
    )
    with pytest.raises(VectorStoreError, match="crash between history and commit"):
        apply_batch(store, history, batch)
    assert store.get("new") is None
    existing = store.get("existing")
    assert existing is not None and existing.memory == "old text"
    assert SQLiteHistory.get(history, "new") == []
    assert [h.record.id for h in store.search(vec("new"), limit=5)] == ["existing"]
    assert store.keyword_search("new", limit=5) == []
    store.close()



def test_a_rolled_back_transaction_leaves_nothing_in_later_searches(tmp_path: Path) -> None:
    """A search inside a write transaction sees its uncommitted rows; once it rolls back,
    searches see none of them (vectors, fields, kept records, keyword postings)."""
    store = _store(tmp_path / "m.db")
    store.insert([rec("existing", "old text")])
    alice = f({"user_id": "alice"})
    assert ids(store.keyword_search("text", 5, alice)) == ["existing"]
    with pytest.raises(RuntimeError, match="crash"), store.transaction():
        store.insert([rec("new", "new text")])
        store.update([replace(rec("existing", "changed text"), vector=None)])
        assert ids(store.search(vec("new"), 5, alice)) == ["new", "existing"]
        assert ids(store.keyword_search("new", 5, alice)) == ["new"]
        raise RuntimeError("crash")
    assert ids(store.search(vec("new"), 5, alice)) == ["existing"]
    assert [h.record.memory for h in store.search(vec("new"), 5, alice)] == ["old text"]
    assert store.keyword_search("new changed", 5, alice) == []
    store.close()

def test_collections_share_a_file_without_mixing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    first, second = _store(path, "first"), SQLiteStore(str(path), collection_name="second")
    second.open(DIM * 2, "another-model")
    first.insert([rec("a")])
    second.insert([rec("b", vector=vec("b", DIM * 2))])
    first.history().add([_row("a")])
    assert first.count() == 1 and second.count() == 1
    assert [h.record.id for h in second.search(vec("b", DIM * 2), limit=5)] == ["b"]
    assert second.history().get("a") == []
    second.reset()
    assert first.count() == 1
    with pytest.raises(ConfigError):
        SQLiteStore(str(path), collection_name="bad-name!")


def test_history_is_chronological_with_insertion_order_breaking_ties(tmp_path: Path) -> None:
    history = SQLiteHistory(str(tmp_path / "history.db"))
    later = _row("m", "UPDATE").model_copy(update={"timestamp": "2025-01-01T00:00:00+00:00"})
    history.add([later])
    history.add([_row("m", "ADD"), _row("m", "DELETE").model_copy(update={"is_deleted": True})])
    assert [h.event for h in history.get("m")] == ["ADD", "DELETE", "UPDATE"]
    assert history.get("m")[1].is_deleted is True
    history.reset("2026-01-01T00:00:00+00:00")
    assert history.get("m") == []
    history.close()
    history.close()


def test_translate_passes_names_and_values_as_parameters() -> None:
    expr = parse_filter({"x'); DROP TABLE t; --": {"eq": "'; DELETE FROM t"}})
    sql, params = translate(expr)
    assert "DROP" not in sql and "DELETE" not in sql
    assert params == ['$."x\'); DROP TABLE t; --"'] * 2 + ["'; DELETE FROM t"]
    assert translate(None) == ("1", [])
    assert translate(parse_filter({"user_id": "u"})) == ("user_id IS ?", ["u"])


def test_a_row_reads_back_as_the_record_written() -> None:
    """``record_of`` builds records positionally: every field lands where it was written."""
    fields_ = [f.name for f in dataclasses.fields(Record) if f.name != "vector"]
    record = Record(**{name: f"value of {name}" for name in fields_} | {
        "metadata": {"k": 1}, "importance": 0.25, "confidence": 0.5, "access_count": 3})
    assert record_of(record_row(record)) == record


def test_fts_query_quotes_every_word() -> None:
    assert fts_query('dogs OR "cats" NEAR(x) *') == '"dogs" OR "OR" OR """cats""" OR "NEAR(x)"'
    assert fts_query("  * - ") is None


def test_keyword_search_matches_english_words_by_their_stem(tmp_path: Path) -> None:
    store = _store(tmp_path / "m.db")
    store.insert([rec("a", "Caroline painted a sunset last week"),
                  rec("b", "Melanie adopted two dogs"),
                  rec("c", "Une randonnée à Zürich"),
                  rec("d", "nothing of that kind")])
    assert ids(store.keyword_search("paintings", limit=5)) == ["a"]
    assert ids(store.keyword_search("adopting dog", limit=5)) == ["b"]
    assert ids(store.keyword_search("randonnee zurich", limit=5)) == ["c"]  # folded, unstemmed
    store.close()



_WORDS = ["tea", "coffee", "paint", "painting", "painted", "dog", "dogs", "Zürich", "café",
          "naïve", "support", "group", "Caroline", "Melanie", "went", "go", "going", "sunrise",
          "lake", "hike", "book", "books", "read"]


@pytest.mark.parametrize("whole", [True, False])
def test_keyword_ranks_computed_in_ram_are_fts5s_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whole: bool
) -> None:
    """Keyword search scores bm25 in RAM: ids, order and scores equal FTS5's own ranking
    (``_fts_search``), for scopes, for words FTS5 reads as several terms (it answers
    those itself), and after another handle deletes, edits and adds records; with the
    index read whole and kept in step with those writes, and read a term at a time."""
    if not whole:
        monkeypatch.setattr(_sqlite_keywords, "ALL_ROWS", 0)
    rng = random.Random(7)
    path = tmp_path / "m.db"
    store, writer = _store(path), _store(path)

    def text() -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 14)))

    writer.insert([rec(f"r{i}", text(), user_id=rng.choice(["a", "b", None]))
                   for i in range(300)])
    queries = [" ".join(rng.sample(_WORDS, rng.randint(1, 4))) for _ in range(24)]
    queries += ["Caroline's dogs", "tea-time", "ZÜRICH cafe", "nothing matches this"]
    filters = [None, f({"user_id": "a"}), f({"user_id": {"ne": "a"}}),
               f({"AND": [{"user_id": "b"}, {"valid_to": {"gt": NOW}}]}),
               f({"topic": "x"})]  # a metadata filter: FTS5 answers

    def same() -> None:
        for query in queries:
            for condition in filters:
                where, params = translate(condition)
                fts = store._fts_search(fts_query(query) or "", 25, condition, where, params)
                got = store.keyword_search(query, 25, condition)
                assert [(h.record.id, h.score) for h in got] == [
                    (h.record.id, h.score) for h in fts], (query, condition)

    same()
    writer.update([replace(rec(f"r{i}", text(), user_id="a"), vector=None)
                   for i in range(1, 300, 11)])
    writer.insert([rec(f"n{i}", text(), user_id="b") for i in range(40)])
    same()
    writer.delete([f"r{i}" for i in range(0, 300, 9)])
    same()
    store.close()
    writer.close()

def test_scope_search_uses_the_scope_index(tmp_path: Path) -> None:
    store = _store(tmp_path / "m.db")
    where, params = translate(parse_filter({"user_id": "u", "n": {"gt": 1}}))
    plan = store._db.conn.execute(
        f'EXPLAIN QUERY PLAN SELECT seq FROM "memkit_records" WHERE {where}', params
    ).fetchall()
    assert any("memkit_records_user_id" in str(row) for row in plan)
    store.close()


def _user(i: int) -> str:
    return "y" if i % 97 == 1 else "w" if i % 25 == 3 else "z" if i % 10 == 0 else "a"


@pytest.mark.parametrize("size", [60, 3000])
@pytest.mark.parametrize(
    "kept", [{"user_id": "y"}, {"user_id": "w"}, {"user_id": "z"}, {"user_id": {"ne": "z"}}, None]
)
def test_narrow_and_broad_filters_rank_as_the_reference_after_deletes_and_updates(
    tmp_path: Path, kept: dict[str, object] | None, size: int
) -> None:
    """Scores come from the matching rows alone, from the whole matrix (past a third of
    it), or from the best rows of the whole matrix that pass the filter: at 3,000 rows
    enough of the best 256 are "z", "w" needs a second, larger set, and "y" is too rare,
    so its rows are read first. In each case the ranking is the reference store's,
    without deleted rows."""
    store, reference = _store(tmp_path / "m.db"), InMemoryStore()
    reference.open(DIM, MODEL)
    records = [rec(f"r{i}", user_id=_user(i)) for i in range(size)]
    for target in (store, reference):
        target.insert(records)
        target.delete([f"r{i}" for i in range(0, 60, 7)])
        target.update([rec("r5", user_id="a", vector=vec("moved"))])
    condition = None if kept is None else f(kept)
    for query in (vec("q1"), vec("q2"), vec("moved")):
        expected = reference.search(query, limit=15, filter=condition)
        got = store.search(query, limit=15, filter=condition)
        assert ids(got) == ids(expected)
        assert [h.score for h in got] == pytest.approx([h.score for h in expected], abs=1e-6)
        assert not {f"r{i}" for i in range(0, 60, 7)} & set(ids(got))
    store.close()


def test_closed_store_refuses_work(tmp_path: Path) -> None:
    store = _store(tmp_path / "m.db")
    store.close()
    store.close()
    with pytest.raises(VectorStoreError, match="closed"):
        store.count()


@contextmanager
def _write_locked(path: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Another connection holds the file's write lock; memkit waits 10 ms for it."""
    monkeypatch.setattr("memkit.history.sqlite.BUSY_TIMEOUT_SECONDS", 0.01)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_a_store_built_while_another_connection_holds_the_write_lock_raises_vector_store_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It raised AttributeError ('_matrix') once the busy timeout ran out."""
    path = str(tmp_path / "memkit.db")
    SQLiteStore(path).close()  # the file exists, in WAL mode
    with _write_locked(path, monkeypatch), pytest.raises(VectorStoreError, match="locked"):
        SQLiteStore(path)


def test_a_history_opened_while_another_connection_holds_the_write_lock_raises_store_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It raised sqlite3.OperationalError, not a memkit error, and kept the file open."""
    path = str(tmp_path / "history.db")
    SQLiteHistory(path).close()  # the file exists, in WAL mode
    with _write_locked(path, monkeypatch), pytest.raises(StoreError, match=r"history .*locked"):
        SQLiteHistory(path)
    SQLiteHistory(path).close()  # free again: it opens
