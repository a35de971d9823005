"""Writers' locks that hold across processes, kept in files beside a SQLite history.

A vector engine without transactions of its own (Chroma, LanceDB, Milvus, Qdrant)
cannot keep two processes from adding one fact at once. The history's database
is shared by those processes anyway, so the lock lives there: for a SQLite
history, ``flock`` on files in ``<history file>.locks/``. A writer holds ``all``
shared and its key's bucket (one of :data:`BUCKETS`, by hash) exclusive;
``EVERY_KEY`` holds ``all`` exclusive. ``flock`` belongs to an open file, so
threads of one process exclude each other as processes do, and the kernel
releases a dead process's locks. POSIX only: on Windows the lock is this
process's alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

BUCKETS = 64
EVERY_KEY = "*"  # memkit.stores.base.EVERY_KEY (not imported: stores import this package)


class FileLocks:
    """``FileLocks("~/.memkit/history.db")``: ``hold(name, key)`` around a write."""

    def __init__(self, db_path: str) -> None:
        self.folder = f"{os.path.abspath(os.path.expanduser(db_path))}.locks"
        self._local = threading.Lock()  # without fcntl: this process's writers only

    def _files(self, name: str, key: str) -> list[tuple[str, bool]]:
        """The files to lock, in order, and whether each is held exclusive."""
        os.makedirs(self.folder, exist_ok=True)
        everything = os.path.join(self.folder, "all")
        if key == EVERY_KEY:
            return [(everything, True)]
        digest = hashlib.blake2b(f"{name}\0{key}".encode(), digest_size=4).digest()
        bucket = int.from_bytes(digest, "big") % BUCKETS
        return [(everything, False), (os.path.join(self.folder, f"{bucket:02d}"), True)]

    @contextmanager
    def hold(self, name: str, key: str) -> Iterator[None]:
        """Exclusive with every other holder of ``key`` (or of ``EVERY_KEY``) of collection
        ``name``, in any process on this machine."""
        if fcntl is None:
            with self._local:
                yield
            return
        with contextlib.ExitStack() as held:
            for path, exclusive in self._files(name, key):
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                held.callback(os.close, fd)
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield

    @asynccontextmanager
    async def ahold(self, name: str, key: str) -> AsyncIterator[None]:
        """:meth:`hold` without blocking the event loop (the locks are polled)."""
        if fcntl is None:
            while not self._local.acquire(blocking=False):
                await asyncio.sleep(0.005)
            try:
                yield
            finally:
                self._local.release()
            return
        with contextlib.ExitStack() as held:
            for path, exclusive in self._files(name, key):
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                held.callback(os.close, fd)
                mode = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
                delay = 0.0005
                while True:
                    try:
                        fcntl.flock(fd, mode)
                        break
                    except BlockingIOError:
                        await asyncio.sleep(delay)
                        delay = min(delay * 2, 0.02)
            yield
