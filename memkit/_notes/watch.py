"""A folder kept in sync with its memories: a thread that re-indexes on file changes.

The thread watches with ``watchfiles`` (the ``notes`` extra). Changes are grouped:
a group ends after 50 ms without further changes, or ``debounce_ms`` after its
first change, so a burst of saves is one index. Each group triggers one index of
the whole folder (files whose chunks did not change cost a read and a hash).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memkit._errors import InvalidArgument
from memkit._imports import require
from memkit._notes.models import IndexResult

_log = logging.getLogger("memkit.notes")
_READY_POLL_MS = 200


class FolderWatch:
    """A running watch of a folder (``Memory.watch_folder``); stop it with :meth:`stop` or
    by leaving a ``with`` block::

        with memory.watch_folder("notes/", user_id="alice") as watch:
            ...  # edits to notes/*.md reach search within about a second
    """

    def __init__(self, folder: str, index: Callable[[], IndexResult], *, debounce_ms: int = 500,
                 on_index: Callable[[IndexResult], Any] | None = None) -> None:
        if isinstance(debounce_ms, bool) or not isinstance(debounce_ms, int) or not (
                0 < debounce_ms <= 60_000):
            raise InvalidArgument(f"debounce_ms must be an integer from 1 to 60000, got {debounce_ms!r}")
        self._watchfiles: Any = require("watchfiles", "notes")
        if not Path(folder).expanduser().is_dir():
            raise InvalidArgument(f"{folder!r} is not a folder")
        self.folder = folder
        self.debounce_ms = debounce_ms
        self._index = index
        self._on_index = on_index
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        #: the last index's outcome, and how many indexes ran (the first one included)
        self.last: IndexResult | None = None
        self.runs = 0
        self._thread = threading.Thread(target=self._run, name=f"memkit-watch {folder}",
                                        daemon=True)

    def start(self) -> FolderWatch:
        """Start watching; returns once the folder is watched and indexed once (errors of
        that first index are raised here)."""
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error
        return self

    def _run(self) -> None:
        try:
            changes = self._watchfiles.watch(
                self.folder, debounce=self.debounce_ms, stop_event=self._stop,
                rust_timeout=_READY_POLL_MS, yield_on_timeout=True, raise_interrupt=False)
            for batch in changes:
                if not self._ready.is_set():  # watching from here on: nothing is missed
                    self._sync()
                    self._ready.set()
                elif batch:
                    self._sync_logged()
        except BaseException as exc:  # reported by start() when it happens before the first index
            if self._ready.is_set():
                _log.exception("watching %s stopped", self.folder)
            self._error = exc
        finally:
            self._ready.set()

    def _sync(self) -> None:
        result = self._index()
        self.last, self.runs = result, self.runs + 1
        if self._on_index is not None:
            self._on_index(result)

    def _sync_logged(self) -> None:
        try:
            self._sync()
        except Exception:  # a bad moment (a file half written, a store hiccup): the next change retries
            _log.exception("indexing %s failed", self.folder)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    @property
    def error(self) -> BaseException | None:
        """Why the watch stopped by itself (the folder removed, say), else None."""
        return self._error

    def wait(self, timeout: float | None = None) -> None:
        """Block until the watch stops (another thread's :meth:`stop`, or an error)."""
        self._thread.join(timeout)

    def stop(self) -> None:
        """Stop watching and wait for an index in progress to finish."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join()

    def __enter__(self) -> FolderWatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
