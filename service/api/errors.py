"""Every error is JSON ``{"detail": "..."}`` with a message a person can act on.

422s add ``errors``: the schema of both is :class:`service.api.schemas.ValidationErrorOut`.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
from fastapi import FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger(__name__)


def redact(url: str | None) -> str:
    """The Redis URL without its password, fit for an error message."""
    if not url:
        return "(unset)"
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


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


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return JSONResponse({"detail": exc.detail}, exc.status_code, headers=exc.headers)


def redis_failure(url: str | None, exc: Exception) -> str:
    """The 503 message for a failed Redis call: unreachable (connection, timeout) or an error."""
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        return f"Redis is unreachable at {redact(url)}: {exc}"
    return f"Redis error at {redact(url)}: {exc}"


async def _redis(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        log.warning("Redis error on %s: %s", request.url.path, exc)
    detail = redis_failure(request.app.state.settings.redis_url, exc)
    return JSONResponse({"detail": detail}, status.HTTP_503_SERVICE_UNAVAILABLE)


def install(app: FastAPI) -> None:
    """Register the handlers that turn every failure into a JSON message."""
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(redis.RedisError, _redis)
