"""Databases written before memkit kept versions open, migrate and keep everything.

``tests/data/sqlite-written-by-0.1.0.db`` was written by memkit at commit bd56505
(the release before versions): alice's "Lives in Lisbon" (2025-01-01) updated to
"Lives in Berlin", "Likes tea" (2025-02-01, topic drinks), bob's "Has a cat" added
and deleted.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from memkit import Memory
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM

OLD_DB = Path(__file__).parent / "data" / "sqlite-written-by-0.1.0.db"


def test_a_sqlite_file_written_by_the_previous_release_migrates(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(OLD_DB, path)
    with sqlite3.connect(path) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(memkit_records)")}
    assert "valid_from" not in columns  # really the old layout
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                vector_store=SQLiteStore(str(path))) as m:
        items = {i.memory: i for i in m.get_all(user_id="alice").results}
        assert set(items) == {"Lives in Berlin", "Likes tea"}
        assert items["Likes tea"].metadata == {"topic": "drinks", "role": "user"}
        assert items["Likes tea"].valid_from is None and items["Likes tea"].valid_to is None
        # the lifecycle fields are missing: no type, full confidence, never accessed
        assert items["Likes tea"].memory_type is None and items["Likes tea"].importance is None
        assert items["Likes tea"].confidence == 1.0 and items["Likes tea"].access_count == 0
        m.update(items["Likes tea"].id, importance=0.9, memory_type="preference")
        assert [i.memory for i in m.get_all(user_id="alice", filters={
            "importance": {"gt": 0.5}, "memory_type": "preference"}).results] == ["Likes tea"]
        city = items["Lives in Berlin"].id
        assert [(h.event, h.new_value) for h in m.history(city)] == [
            ("ADD", "Lives in Lisbon"), ("UPDATE", "Lives in Berlin")]
        assert m.search("tea", user_id="alice", mode="keyword").results[0].memory == "Likes tea"
        assert m.get_all(user_id="bob").results == []
        # old memories count as valid from the beginning
        assert len(m.get_all(user_id="alice", as_of="2000-01-01T00:00:00Z").results) == 2
        assert m.get_all(user_id="alice", filters={"valid_to": {"lte": "2999-01-01"}}).results == []
        # and take part in versions from now on
        m.update(city, "Lives in Tokyo")
        assert [v.memory for v in m.versions(city)] == ["Lives in Berlin", "Lives in Tokyo"]
        m.revert(m.history(city)[-1].id)
        assert m.get(city).memory == "Lives in Berlin"  # type: ignore[union-attr]
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                vector_store=SQLiteStore(str(path))) as m:  # reopening is idempotent
        assert len(m.versions(city)) == 3
        assert len(m.history(city)) == 4


def test_a_file_indexed_before_stemming_is_reindexed_once(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(OLD_DB, path)

    def fts_sql() -> str:
        with sqlite3.connect(path) as conn:
            row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'memkit_fts'").fetchone()
        return str(row[0])

    assert "porter" not in fts_sql()
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                vector_store=SQLiteStore(str(path))) as m:
        found = m.search("living", user_id="alice", mode="keyword").results
        assert [i.memory for i in found] == ["Lives in Berlin"]
    assert "porter" in fts_sql()
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(),
                vector_store=SQLiteStore(str(path))) as m:
        m.add("Likes hiking", user_id="alice", infer=False)
        assert [i.memory for i in m.search("hikes", user_id="alice", mode="keyword").results] == [
            "Likes hiking"]
