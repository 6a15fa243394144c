"""Every error is JSON ``{"detail": "..."}`` with a message a person can act on.

410s (a topic number that is gone) add what became of it
(:class:`service.api.schemas.TopicGoneOut`); 422s add ``errors``: the schema of both is
:class:`service.api.schemas.ValidationErrorOut`.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from fastapi import FastAPI, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from service.redact import redact
from service.store.redis_client import is_transient

log = logging.getLogger(__name__)


def _describe(error: dict[str, Any]) -> str:
    loc = tuple(error.get("loc", ()))
    where = ".".join(str(p) for p in (loc[1:] if loc[:1] == ("body",) and len(loc) > 1 else loc))
    if error.get("type") == "json_invalid":
        ctx = error.get("ctx") or {}
        reason = ctx.get("error", "") if isinstance(ctx, dict) else ""
        return f"malformed JSON body: {reason}".rstrip(": ")
    return f"{where}: {error.get('msg')}" if where else str(error.get("msg"))


async def _validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    message = "invalid request: " + "; ".join(_describe(e) for e in errors)
    slim = [{"loc": e.get("loc"), "msg": e.get("msg"), "type": e.get("type")} for e in errors]
    return JSONResponse({"detail": message, "errors": slim}, status.HTTP_422_UNPROCESSABLE_CONTENT)


class GoneTopic(HTTPException):
    """A 410 for a topic number that is gone, its JSON saying what became of it beside
    ``detail`` (``fields``: :class:`service.api.schemas.TopicGoneOut`'s)."""

    def __init__(self, detail: str, fields: dict[str, Any]) -> None:
        super().__init__(status.HTTP_410_GONE, detail)
        self.fields = fields


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    fields = exc.fields if isinstance(exc, GoneTopic) else {}
    return JSONResponse({"detail": exc.detail, **fields}, exc.status_code, headers=exc.headers)


def redis_failure(url: str | None, exc: Exception) -> str:
    """The public 503 message for a failed Redis call: unreachable (transient) or an error.
    It names neither the server nor the client library's text (they carry the host, port and
    user, for anyone who asks): those go to the operator's log, redacted (redis_failure_log)."""
    if is_transient(exc):
        return "Redis is unreachable (the API's log says where and why)"
    return "Redis answered with an error (the API's log says which)"


def redis_failure_log(url: str | None, exc: Exception) -> str:
    """The operator's line for a failed Redis call: where and why, the password redacted."""
    return f"Redis at {redact(url)}: {redact(str(exc))}"


async def _redis(request: Request, exc: Exception) -> JSONResponse:
    if not is_transient(exc):
        log.warning(
            "on %s: %s",
            request.url.path,
            redis_failure_log(request.app.state.redis_url, exc),
        )
    detail = redis_failure(request.app.state.redis_url, exc)
    return JSONResponse({"detail": detail}, status.HTTP_503_SERVICE_UNAVAILABLE)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    """A bug: the traceback goes to the log (Starlette logs it), the client gets JSON."""
    return JSONResponse(
        {"detail": "internal error: the API's log has the details"},
        status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


def install(app: FastAPI) -> None:
    """Register the handlers that turn every failure into a JSON message."""
    app.add_exception_handler(Exception, _unexpected)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(redis.RedisError, _redis)
