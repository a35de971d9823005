"""The dashboard's server side: its files under ``/ui/`` with a strict Content-Security-
Policy, and the exchange of a one-time launch token for a key of the session."""

from __future__ import annotations

import hmac
import secrets
from functools import cache
from importlib import resources
from typing import Annotated

from fastapi import APIRouter, FastAPI, Header, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from memkit.server import Grant

#: no inline script or style, no eval, nothing from another origin, never framed
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
           "Cache-Control": "no-cache"}
TYPES = {"html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
         "css": "text/css; charset=utf-8", "svg": "image/svg+xml"}


@cache
def assets() -> dict[str, bytes]:
    """Every file of the dashboard by its path under ``static/`` (read once)."""
    found: dict[str, bytes] = {}
    pending = [("", resources.files("memkit.ui") / "static")]
    while pending:
        prefix, folder = pending.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                pending.append((f"{prefix}{entry.name}/", entry))
            elif entry.name.rpartition(".")[2] in TYPES:
                found[prefix + entry.name] = entry.read_bytes()
    return found


def _asset(path: str) -> Response:
    body = assets().get(path)
    if body is None:
        return JSONResponse({"error": {"type": "not_found", "message": f"no file {path!r}"}},
                            404, headers=HEADERS)
    return Response(body, media_type=TYPES[path.rpartition(".")[2]], headers=HEADERS)


def mount_ui(app: FastAPI) -> None:
    """Serve the dashboard at ``/ui/`` of ``app`` (from :func:`memkit.server.create_app`).

    The pages are public; every piece of data comes from the API with the key the user
    gives the page, so a key bound to a scope sees and changes only that scope here too.
    """
    if not hasattr(app.state, "ui_launch_tokens"):
        app.state.ui_launch_tokens = set()
    router = APIRouter(include_in_schema=False)

    @router.get("/ui")
    async def ui_root() -> RedirectResponse:
        return RedirectResponse("/ui/", 308)

    @router.get("/ui/")
    async def ui_index() -> Response:
        return _asset("index.html")

    @router.get("/ui/session")
    async def ui_needs_key(request: Request) -> JSONResponse:
        """Whether the API asks for a key (so the page knows to ask for one first)."""
        return JSONResponse({"keys": bool(request.app.state.api_keys)})

    @router.post("/ui/session")
    async def ui_session(request: Request,
                         authorization: Annotated[str | None, Header()] = None) -> JSONResponse:
        """Trade a launch token (once) for a key that lives as long as the server."""
        scheme, _, token = (authorization or "").partition(" ")
        tokens: set[str] = request.app.state.ui_launch_tokens
        keys: dict[str, Grant] = request.app.state.api_keys
        known = next((t for t in tokens if hmac.compare_digest(t.encode(), token.encode())), None)
        if scheme.lower() != "bearer" or known is None:
            return JSONResponse({"error": {"type": "unauthorized", "message":
                                           "this link was used already or is not valid; "
                                           "run memkit ui again for a new one"}}, 401)
        tokens.discard(known)
        grant = keys.pop(known)
        key = secrets.token_urlsafe(32)
        keys[key] = grant
        return JSONResponse({"key": key}, headers={"Cache-Control": "no-store"})

    @router.get("/ui/{path:path}")
    async def ui_file(path: str) -> Response:
        return _asset(path)

    app.include_router(router)


def launch_token(app: FastAPI, grant: Grant | None = None) -> str:
    """A token for one visit of ``/ui/#token=<token>``, with ``grant`` (admin by default)
    until the page trades it for a key of its own."""
    token = secrets.token_urlsafe(32)
    app.state.ui_launch_tokens.add(token)
    app.state.api_keys[token] = grant or Grant(admin=True)
    return token
