"""ASGI middleware that holds for every route: a request body size limit, and the guard
against requests a web page forges from another origin."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memkit._net import is_loopback


class BodySizeLimit:
    """Answer 413 to a body over ``max_bytes``: at once when Content-Length says so,
    otherwise after reading at most ``max_bytes + 1`` bytes of a chunked body."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None:
            try:
                too_big = int(length) > self.max_bytes
            except ValueError:
                too_big = False
            if too_big:
                await refuse(send, 413, "payload_too_large",
                             f"the body exceeds {self.max_bytes} bytes")
                return
            await self.app(scope, receive, send)
            return
        if b"chunked" not in headers.get(b"transfer-encoding", b"").lower():
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await refuse(send, 413, "payload_too_large",
                             f"the body exceeds {self.max_bytes} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class BrowserGuard:
    """Refuse what a web page of another site could make a browser send.

    A state-changing request (not GET, HEAD or OPTIONS) whose ``Origin`` is not the
    server's own is refused: a bearer key cannot be forged, but without keys (the
    loopback-only mode) a form on any site could otherwise post here. A read changes
    state too (a search logged, a hit reinforced), so any request to the API (``/v1/``)
    that a browser marks as sent by another site's page (``Sec-Fetch-Site: cross-site``,
    or ``same-site``: another port of the same host is another program's page) is
    refused as well; the dashboard's own requests say ``same-origin``, an address typed
    or bookmarked says ``none``, and clients that are not browsers send no such header.
    Without keys the ``Host`` must also name this machine, so a DNS name rebound to
    127.0.0.1 cannot read the API as its own origin. ``keys`` is the server's (live) key
    mapping.
    """

    SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
    FOREIGN_SITES = frozenset({b"cross-site", b"same-site"})

    def __init__(self, app: ASGIApp, keys: Mapping[str, Any]) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if not self.keys and not is_loopback(_hostname(host)):
            await refuse(send, 403, "forbidden", f"a server without API keys answers only "
                                                 f"to a loopback host name, not {host[:100]!r}")
            return
        origin = headers.get(b"origin")
        if scope["method"] not in self.SAFE and origin is not None:
            netloc = urlsplit(origin.decode("latin-1")).netloc.lower()
            if netloc != host:
                await refuse(send, 403, "forbidden",
                             "a request from another origin may not change anything")
                return
        site = headers.get(b"sec-fetch-site", b"").lower()
        if site in self.FOREIGN_SITES and scope["path"].startswith("/v1/"):
            await refuse(send, 403, "forbidden",
                         f"a page of another site may not call this API (Sec-Fetch-Site: "
                         f"{site.decode('latin-1')}); use the dashboard at /ui/ or a client "
                         f"that is not a browser")
            return
        await self.app(scope, receive, send)


def _hostname(host: str) -> str:
    """``host`` of a Host header without its port (IPv6 brackets removed)."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


async def refuse(send: Send, status: int, kind: str, message: str) -> None:
    raw = json.dumps({"error": {"type": kind, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(raw)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": raw})
