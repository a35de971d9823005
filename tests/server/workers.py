"""``memkit serve --workers N`` as a subprocess, and clients pinned to one of its workers.

The workers share one listening socket, so which one accepts a connection is the kernel's
choice; a client learns its worker from ``/health``'s ``instance`` and keeps that one
connection (keep-alive) for what it does next.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.server._own_engines import free_port, stop_process

ROOT = Path(__file__).resolve().parents[2]
KEYS = {"admin-key": {"admin": True}, "alice-key": {"user_id": "alice"},
        "bob-key": {"user_id": "bob"}}
#: how long anything the tests wait for may take before the test fails (never a timing claim)
PATIENCE = 60.0


def script_env(config: dict[str, Any] | None = None) -> dict[str, str]:
    """The environment of a child process: this tree first on the path, no stray MEMKIT_*."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMKIT_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if config is not None:
        env["MEMKIT_CONFIG"] = json.dumps(config)
    return env


class Workers:
    """A running ``memkit serve --workers N``."""

    def __init__(self, url: str, count: int) -> None:
        self.url = url
        self.count = count

    def client(self, key: str, worker: str | None = None) -> tuple[httpx.Client, str]:
        """A client with ``key`` whose connection is on ``worker`` (any when ``None``), and
        that worker's instance id."""
        deadline = time.monotonic() + PATIENCE
        while True:
            client = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"},
                                  timeout=httpx.Timeout(PATIENCE))
            instance = client.get("/health").json()["instance"]
            if worker is None or instance == worker:
                return client, instance
            client.close()
            assert time.monotonic() < deadline, f"no connection reached worker {worker}"

    def instances(self) -> list[str]:
        """Every worker's instance id (each worker answered at least once)."""
        seen: set[str] = set()
        deadline = time.monotonic() + PATIENCE
        while len(seen) < self.count:
            assert time.monotonic() < deadline, f"only {len(seen)} workers answered"
            with httpx.Client(base_url=self.url) as probe:
                seen.add(probe.get("/health").json()["instance"])
        return sorted(seen)


@contextmanager
def serving_workers(config: dict[str, Any], workers: int = 2,
                    keys: dict[str, Any] | None = None) -> Iterator[Workers]:
    """``memkit serve --workers N`` on a free loopback port with ``config``; stopped after."""
    port = free_port()
    env = script_env(config)
    env["MEMKIT_API_KEYS"] = json.dumps(KEYS if keys is None else keys)
    server = subprocess.Popen(
        [sys.executable, "-m", "memkit.cli", "serve", "--port", str(port),
         "--workers", str(workers)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + PATIENCE
        while True:
            try:
                httpx.get(f"{url}/health")
                break
            except httpx.TransportError:
                if server.poll() is not None:
                    raise AssertionError(f"memkit serve exited: {server.stderr.read()}"
                                         ) from None
                assert time.monotonic() < deadline, "memkit serve did not start"
                time.sleep(0.1)
        yield Workers(url, workers)
    finally:
        stop_process(server, 30)


class EventStream:
    """``GET /v1/events`` read in a thread: each event's data with its ``event`` (the SSE
    event name) and ``event_id`` (the SSE ``id``)."""

    def __init__(self, client: httpx.Client, last_event_id: str | None = None,
                 params: dict[str, str] | None = None) -> None:
        headers = {} if last_event_id is None else {"Last-Event-ID": last_event_id}
        self._client = client
        self._stream = client.stream("GET", "/v1/events", headers=headers, params=params)
        self.response = self._stream.__enter__()
        assert self.response.status_code == 200, self.response.read()
        self.events: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._connected = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        self._wait(lambda: self._connected, "the stream to open")

    def _read(self) -> None:
        kind, event_id = "", None
        try:
            for line in self.response.iter_lines():
                with self._changed:
                    if line == ": connected":
                        self._connected = True
                    elif line.startswith("event: "):
                        kind = line[len("event: "):]
                    elif line.startswith("id: "):
                        event_id = line[len("id: "):]
                    elif line.startswith("data: "):
                        data = json.loads(line[len("data: "):])
                        self.events.append({**data, "event": kind, "event_id": event_id})
                        kind, event_id = "", None
                    self._changed.notify_all()
        except httpx.HTTPError:
            pass  # closed by the test

    def _wait(self, done: Callable[[], bool], what: str) -> None:
        with self._changed:
            assert self._changed.wait_for(done, PATIENCE), f"waited {PATIENCE} s for {what}"

    def until(self, memory: str) -> list[dict[str, Any]]:
        """Every event so far, once an event carrying ``memory`` (its text) arrived."""
        self._wait(lambda: any(e.get("memory") == memory for e in self.events),
                   f"an event with {memory!r}")
        with self._changed:
            return list(self.events)

    def close(self) -> None:
        # wake the reading thread first: closing the response waits for it otherwise, i.e.
        # for the server's next keep-alive comment
        stream = self.response.extensions.get("network_stream")
        sock = None if stream is None else stream.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._stream.__exit__(None, None, None)
        self._client.close()
        self._thread.join(PATIENCE)
