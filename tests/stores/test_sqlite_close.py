"""Closing a SQLite memory while other threads still read it: they get a clear error,
never a crash (CrewAI, for one, saves from a thread pool of its own that may still be
running when the caller's ``with Memory(...)`` block ends)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memkit.history.sqlite import SQLiteConnection

_RACE = r'''
import sys, threading, time
from memkit import Memory, MemkitError
from memkit.testing import HashEmbedder

unexpected = []
for round in range(60):
    path = f"{sys.argv[1]}/m{round}.db"
    memory = Memory({"vector_store": {"provider": "sqlite", "config": {"path": path}}},
                    embedder=HashEmbedder())
    [added] = memory.add("Alice is vegetarian", user_id="alice", infer=False).results
    started, stop = threading.Barrier(5), threading.Event()

    def read() -> None:
        started.wait()
        while not stop.is_set():
            try:
                memory.get(added.id)
            except MemkitError:  # closed: what a reader may meet, and all it may meet
                return
            except BaseException as exc:
                unexpected.append(exc)
                return

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    started.wait()
    time.sleep(0.002)
    memory.close()
    stop.set()
    for thread in threads:
        thread.join()
print("ok" if not unexpected else repr(unexpected[:3]))
'''


def test_threads_reading_while_the_memory_closes_get_an_error_not_a_crash(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _RACE, str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr[-2000:]


def test_a_snapshot_open_when_the_connection_closes_reads_on_then_closes(tmp_path: Path) -> None:
    db = SQLiteConnection(str(tmp_path / "x.db"))
    with db.write() as conn:
        conn.execute("CREATE TABLE t (v INTEGER)")
        conn.execute("INSERT INTO t VALUES (1)")
    inside, closed = threading.Event(), threading.Event()
    seen: list[object] = []

    def read() -> None:
        with db.snapshot() as conn:
            inside.set()
            closed.wait(10)
            seen.append(conn.execute("SELECT v FROM t").fetchone()[0])  # still open
        seen.append(conn)

    reader = threading.Thread(target=read)
    reader.start()
    assert inside.wait(10)
    db.close()
    closed.set()
    reader.join(10)

    assert seen[0] == 1
    reader_connection = seen[1]
    assert isinstance(reader_connection, sqlite3.Connection)
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):  # the snapshot's end closed it
        reader_connection.execute("SELECT 1")
    with pytest.raises(sqlite3.ProgrammingError, match="closed"), db.snapshot():
        pass
