"""How memkit errors and HTTP failures become JSON error bodies."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from memkit import (
    ConflictError,
    EmbeddingError,
    FilterError,
    LLMError,
    MemkitError,
    NotFoundError,
    ScopeError,
    StaleVersionError,
    StoreError,
)
from memkit.server._auth import ScopeForbidden
from memkit.server._schemas import ErrorBody

_ERROR_TYPES: list[tuple[type[Exception], int, str]] = [
    (NotFoundError, 404, "not_found"),
    (StaleVersionError, 412, "precondition_failed"),
    (ConflictError, 409, "conflict"),
    (ScopeError, 400, "scope_error"),
    (FilterError, 400, "filter_error"),
    (LLMError, 502, "llm_error"),
    (EmbeddingError, 502, "embedding_error"),
    (StoreError, 503, "store_error"),
    (MemkitError, 400, "invalid_request"),
]
_HTTP_TYPES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
               409: "conflict",
               413: "payload_too_large", 422: "validation_error"}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": kind}
    for code, kind in ((400, "invalid request"), (401, "missing or unknown API key"),
                       (403, "outside the key's scope"), (409, "conflicts with what is stored"),
                       (413, "body too large"),
                       (422, "malformed body or parameters"),
                       (503, "an engine failed; retry after Retry-After seconds"))
}

#: the routes that take ``If-Match`` answer 412 when it names an older version
PRECONDITION_RESPONSE: dict[int | str, dict[str, Any]] = {
    412: {"model": ErrorBody, "description": "the memory changed since the If-Match version"}}


class AuthError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


#: seconds a client should wait before retrying after an engine failure (503)
RETRY_AFTER_SECONDS = 5


def error_response(status: int, kind: str, message: str) -> JSONResponse:
    headers = ({"WWW-Authenticate": "Bearer"} if status == 401
               else {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 503 else None)
    return JSONResponse({"error": {"type": kind, "message": message}}, status, headers=headers)


def _memkit_error(exc: MemkitError) -> JSONResponse:
    for cls, status, kind in _ERROR_TYPES:
        if isinstance(exc, cls):
            return error_response(status, kind, str(exc))
    raise AssertionError("unreachable")  # pragma: no cover


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(MemkitError)
    async def on_memkit(_: Request, exc: MemkitError) -> JSONResponse:
        return _memkit_error(exc)

    @app.exception_handler(ScopeForbidden)
    async def on_forbidden(_: Request, exc: ScopeForbidden) -> JSONResponse:
        return error_response(403, "forbidden", str(exc))

    @app.exception_handler(AuthError)
    async def on_auth(_: Request, exc: AuthError) -> JSONResponse:
        return error_response(exc.status, _HTTP_TYPES[exc.status], str(exc))

    @app.exception_handler(RequestValidationError)
    async def on_validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "validation_error", _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def on_http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, _HTTP_TYPES.get(exc.status_code, "http_error"),
                              str(exc.detail))

    @app.exception_handler(Exception)
    async def on_crash(_: Request, exc: Exception) -> JSONResponse:
        return error_response(500, "internal_error", f"{type(exc).__name__}: {exc}")
