"""An HNSW index (usearch) beside a SQLite store's in-RAM matrix, for unscoped searches.

The index is keyed by record ``seq`` and covers the change log up to
:attr:`AnnIndex.covered`. The store feeds it what changed (copies of the rows,
taken under the store's lock); one daemon thread per store applies the feed, so
no search waits for a build. A search asks the index for candidates, adds the
rows changed after ``covered`` and re-ranks them all exactly with the matrix.

The index is saved beside the database as ``<db>.ann-<tables>``: a magic line,
a JSON header (format, dimension, tables, last change covered, scrubs) and usearch's
own serialisation, written to a temporary file and renamed over the old one.
A file that does not load, or whose header does not match, is discarded.

A purge scrubs the collection: it drops the file and counts the scrub in the
database. usearch keeps a removed key's vector in the index, so an index made
before the last scrub (by another process, still open) is never saved: it is
checked before the file is written and again after (a scrub meanwhile removes it).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.util
import json
import logging
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from memkit._errors import VectorStoreError

log = logging.getLogger(__name__)

FORMAT = 1
MAGIC = b"memkit-ann\n"
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 256
# rows added per hold of the lock once the index serves searches
_BATCH = 256
# indexes whose thread runs: stopped at exit, since usearch aborts the process when the
# interpreter ends inside one of its multi-threaded adds
_RUNNING: weakref.WeakSet[AnnIndex] = weakref.WeakSet()


def usearch_index() -> type[Any] | None:
    """usearch's ``Index`` class, or None when usearch is not installed."""
    if importlib.util.find_spec("onnxruntime") is not None:
        # onnxruntime (1.32) crashes the process when its extension loads after that of
        # usearch 2.26.2-2.26.6 (pyproject.toml pins below those); loading it first is
        # safe with every version
        with contextlib.suppress(ImportError):
            importlib.import_module("onnxruntime")
    try:
        from usearch.index import Index
    except ImportError:
        return None
    return Index


@dataclass
class Feed:
    """Changes up to ``until``: rows to (re)write with their unit vectors, rows to remove.

    ``full``: the rows are all live rows, the index is rebuilt from them.
    ``expect``: after applying, the index's keys must be exactly these (a loaded file)."""

    until: int
    seqs: npt.NDArray[np.int64]
    vectors: npt.NDArray[np.float32]
    gone: npt.NDArray[np.int64]
    full: bool = False
    expect: npt.NDArray[np.int64] | None = None


class AnnIndex:
    """The HNSW index of one collection's tables (not the knowledge graph), and the thread
    that keeps it."""

    def __init__(
        self, index_class: type[Any], path: str | None, dimension: int, tables: str,
        scrubs: Callable[[], int], epoch: int,
    ) -> None:
        self._index_class = index_class
        self.path = path
        self.dimension = dimension
        self.tables = tables
        #: reads the collection's scrub count; ``epoch``: what it was when the index was made
        self._scrubs = scrubs
        self.epoch = epoch
        self._lock = threading.Lock()  # guards the index while the thread changes it
        self._wake = threading.Condition()
        self._index: Any = None  # serves searches once built or loaded
        #: the change number the index reflects (-1: no index)
        self.covered = -1
        #: the change number fed so far (-1: nothing; the store sends a full feed)
        self.fed = -1
        #: True until the thread has tried the file
        self.loading = path is not None
        #: True after loading a file: the next feed brings the live keys to check
        self.verify = False
        self._queue: list[Feed] = []
        self._stop = False
        self._unsaved = 0
        self._thread: threading.Thread | None = None

    # -- the store's side (under its lock) ----------------------------------------
    def start(self) -> None:
        if self._thread is None and not self._stop:
            self._thread = threading.Thread(
                target=self._run, name=f"memkit-ann-{self.tables}", daemon=True
            )
            self._thread.start()
            _RUNNING.add(self)

    def feed(self, item: Feed) -> None:
        with self._wake:
            if item.full:
                self._queue.clear()
            self._queue.append(item)
            self.fed = item.until
            self._wake.notify()

    @property
    def ready(self) -> bool:
        return self._index is not None and self.covered >= 0

    def candidates(self, query: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.int64]:
        with self._lock:
            index = self._index
            if index is None or len(index) == 0:
                return np.empty(0, np.int64)
            keys = index.search(query, min(count, len(index))).keys
        return np.asarray(keys, np.int64)

    def close(self, *, save: bool = True) -> None:
        """Stop the thread (it finishes the batch it holds); ``save`` what it has not saved."""
        with self._wake:
            self._stop = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()
        _RUNNING.discard(self)
        if save and self._unsaved:
            self._save()

    def discard_file(self) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                os.remove(self.path)

    # -- the thread ------------------------------------------------------------------
    def _run(self) -> None:
        try:
            if self.loading:
                self._load()
            while True:
                with self._wake:
                    while not self._queue and not self._stop:
                        self._wake.wait()
                    if self._stop:
                        return
                    item = self._queue.pop(0)
                self._apply(item)
                index = self._index
                if not self._queue and index is not None and self._unsaved > max(1000, len(index) // 10):
                    self._save()
        except Exception:  # a index is an accelerator: without it searches are exact
            log.exception("the ANN index of %s stopped; searches stay exact", self.tables)
            with self._lock:
                self._index, self.covered = None, -1

    def _new_index(self) -> Any:
        return self._index_class(
            ndim=self.dimension, metric="cos", dtype="i8", connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH,
        )

    def _apply(self, item: Feed) -> None:
        if item.full:
            index = self._new_index()
            for start in range(0, len(item.seqs), 4 * _BATCH):
                if self._stop:
                    return
                stop = start + 4 * _BATCH
                index.add(item.seqs[start:stop].astype(np.uint64), item.vectors[start:stop])
            with self._lock:
                self._index, self.covered = index, item.until
            self._unsaved = max(len(item.seqs), 1)
            return
        index = self._index
        if index is None:  # a rebuild is asked for
            return
        with self._lock:
            stale = np.concatenate([item.gone, item.seqs]).astype(np.uint64)
            present = stale[np.asarray(index.contains(stale), np.bool_)] if len(stale) else stale
            if len(present):
                index.remove(present)
        for start in range(0, len(item.seqs), _BATCH):
            if self._stop:
                return
            stop = start + _BATCH
            with self._lock:
                index.add(item.seqs[start:stop].astype(np.uint64), item.vectors[start:stop])
        if item.expect is not None and not np.array_equal(
            np.sort(np.asarray(index.keys, np.int64)), np.sort(item.expect)
        ):
            log.warning("the ANN index file %s does not match the database; rebuilding", self.path)
            with self._lock:
                self._index, self.covered = None, -1
            with self._wake:
                self._queue.clear()
                self.fed = -1  # the store sends a full feed
            self.discard_file()
            return
        with self._lock:
            self.covered = item.until
        self._unsaved += len(item.seqs) + len(item.gone)

    # -- the file ------------------------------------------------------------------------
    def _header(self, covered: int) -> dict[str, Any]:
        return {"format": FORMAT, "dimension": self.dimension, "tables": self.tables,
                "covered": covered, "scrubs": self.epoch}

    def _load(self) -> None:
        """Restore the index saved beside the database; on any mismatch leave no index."""
        assert self.path is not None
        try:
            with open(self.path, "rb") as file:
                blob = file.read()
            magic, _, rest = blob.partition(b"\n")
            header_line, _, body = rest.partition(b"\n")
            header = json.loads(header_line)
            covered = header["covered"]
            if magic + b"\n" != MAGIC or header != self._header(covered) or covered < 0:
                raise ValueError(f"header {header!r} is not this collection's")
            index = self._index_class.restore(bytearray(body))
            if index is None or index.ndim != self.dimension:
                raise ValueError("the index does not restore")
            index.expansion_search = EXPANSION_SEARCH
        except FileNotFoundError:
            index = None
        except Exception as exc:  # corrupt, truncated, another format: rebuild
            log.warning("discarding the ANN index file %s: %s", self.path, exc)
            self.discard_file()
            index = None
        with self._wake:
            if index is not None and not self._queue:
                with self._lock:
                    self._index, self.covered = index, int(covered)
                self.fed, self.verify = int(covered), True  # the store feeds what follows
            self.loading = False

    def _save(self) -> None:
        index = self._index
        if self.path is None or index is None or not self._unscrubbed():
            return
        with self._lock:
            body, covered = index.save(), self.covered
        temporary = f"{self.path}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            with open(temporary, "wb") as file:
                file.write(MAGIC + json.dumps(self._header(covered)).encode() + b"\n")
                file.write(body)
            os.replace(temporary, self.path)
            self._unsaved = 0
        except OSError as exc:
            log.warning("could not save the ANN index %s: %s", self.path, exc)
            with contextlib.suppress(OSError):
                os.remove(temporary)
        if not self._unscrubbed():  # scrubbed while the file was written
            self.discard_file()

    def _unscrubbed(self) -> bool:
        """No purge scrubbed the collection since the index was made."""
        try:
            return self._scrubs() == self.epoch
        except VectorStoreError:  # the database is closed: nothing says the index may be kept
            return False


@atexit.register
def _stop_all() -> None:
    """Stop every running index thread (each finishes its batch) and save its index: a
    store the program never closed ends as if it had been."""
    for index in list(_RUNNING):
        with contextlib.suppress(Exception):
            index.close()
