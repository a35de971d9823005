"""SQLite reads run on each thread's own WAL connection: a request that holds the shared
connection (a long write, a slow search) does not hold up other threads' reads, and a
thread's connection closes once the thread has ended."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from memkit import Memory
from memkit.stores.sqlite import SQLiteStore
from memkit.testing import HashEmbedder, ScriptedLLM

HANG_GUARD = 60.0  # seconds; only so that a regression fails instead of hanging the suite


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    store = SQLiteStore(os.fspath(tmp_path / "memkit.db"))
    with Memory(llm=ScriptedLLM(), embedder=HashEmbedder(), vector_store=store) as m:
        m.add(["I like green tea", "I like coffee"], user_id="alice", infer=False,
              metadata={"topic": "drinks"})
        yield m


def test_reads_complete_while_another_thread_holds_a_write_transaction(memory: Any) -> None:
    store: SQLiteStore = memory.vector_store
    inside, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store._db.write() as conn:  # holds the shared connection and the file's write lock
            conn.execute(f'UPDATE {store._records} SET memory = memory || \' (uncommitted)\'')
            inside.set()
            release.wait(HANG_GUARD)

    def reads() -> dict[str, Any]:
        return {
            "keyword": [i.memory for i in memory.search("tea", user_id="alice",
                                                       mode="keyword").results],
            "all": sorted(i.memory for i in memory.get_all(user_id="alice").results),
            "filtered": len(memory.get_all(user_id="alice", filters={"topic": "drinks"}).results),
            "count": store.count(None),
        }

    with ThreadPoolExecutor(2) as pool:
        holding = pool.submit(writer)
        assert inside.wait(HANG_GUARD)
        try:
            seen = pool.submit(reads).result(timeout=HANG_GUARD)
        finally:
            release.set()
        holding.result(timeout=HANG_GUARD)
    assert seen == {"keyword": ["I like green tea"], "all": ["I like coffee", "I like green tea"],
                    "filtered": 2, "count": 2}
    assert sorted(i.memory for i in memory.get_all(user_id="alice").results) == [
        "I like coffee (uncommitted)", "I like green tea (uncommitted)"]


def test_a_read_inside_the_threads_own_write_sees_its_uncommitted_rows(memory: Any) -> None:
    store: SQLiteStore = memory.vector_store
    with store._db.write() as conn:
        conn.execute(f"DELETE FROM {store._records} WHERE memory = 'I like coffee'")
        assert store.count(None) == 1
    assert store.count(None) == 1


def test_closing_the_store_closes_every_reader(tmp_path: Path) -> None:
    store = SQLiteStore(os.fspath(tmp_path / "memkit.db"))
    store.open(8, "m")
    with ThreadPoolExecutor(3) as pool:
        list(pool.map(lambda _: store.count(None), range(6)))
    readers = list(store._db._readers)
    assert readers
    store.close()
    assert not store._db._readers
    for conn in readers:
        with pytest.raises(Exception, match="closed"):
            conn.execute("SELECT 1")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts the open files in /proc")
def test_a_thread_per_request_leaves_no_file_open_per_request(memory: Any) -> None:
    """A server that serves each request in a thread of its own (http.server's threading
    servers, Django's runserver): one open file per request ran the process out of them."""

    def serve_one_request() -> None:
        thread = threading.Thread(target=memory.get_all, kwargs={"user_id": "alice"})
        thread.start()
        thread.join()

    serve_one_request()
    open_files = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        serve_one_request()
    assert len(os.listdir("/proc/self/fd")) <= open_files + 4  # it was 100 more
