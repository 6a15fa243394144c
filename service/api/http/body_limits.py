"""Reads every request's body before anything parses it, within a size and a time limit.

413 beyond the path's limit (``limits``, else ``max_bytes``): the declared Content-Length is
checked, and the bytes that actually arrive are counted too (a chunked or lying client), reading
at most the limit plus one; the rest is never read (the connection closes). 408 when
the whole body has not arrived within ``timeout_s`` (a slow or stalled client frees its place
instead of holding it). 400 when the body is not UTF-8 (JSON's only encoding on the wire). The
app then gets the body whole, at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from fastapi import status
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def _too_large(size: str, limit: int) -> JSONResponse:
    return JSONResponse(
        {"detail": f"request body is {size} bytes; the limit is {limit} bytes"},
        status.HTTP_413_CONTENT_TOO_LARGE,
        headers={"Connection": "close"},  # the rest of the body is never read
    )


class BodyLimitMiddleware:
    """ASGI middleware reading the body of every HTTP request within its limits: ``max_bytes``,
    or the one ``limits`` gives its path."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_bytes: int,
        timeout_s: float,
        limits: Mapping[str, int] | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.limits = dict(limits or {})

    @staticmethod
    async def _read(receive: Receive, limit: int) -> bytearray | JSONResponse | None:
        """The body, the error to answer, or None when the client went away."""
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > limit:
                return _too_large(f"more than {limit}", limit)
        return body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limits.get(scope["path"], self.max_bytes)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                response = JSONResponse(
                    {"detail": "Content-Length is not a number"}, status.HTTP_400_BAD_REQUEST
                )
                await response(scope, receive, send)
                return
            if int(declared) > limit:
                await _too_large(declared.decode(), limit)(scope, receive, send)
                return
        try:
            async with asyncio.timeout(self.timeout_s):
                read = await self._read(receive, limit)
        except TimeoutError:
            read = JSONResponse(
                {
                    "detail": f"the request body did not arrive within {self.timeout_s:g} s "
                    "(STREAMLDA_BODY_TIMEOUT_S)"
                },
                status.HTTP_408_REQUEST_TIMEOUT,
                headers={"Connection": "close"},  # the rest of the body is never read
            )
        if read is None:
            return
        if isinstance(read, JSONResponse):
            await read(scope, receive, send)
            return
        try:
            read.decode("utf-8")
        except UnicodeDecodeError as exc:
            response = JSONResponse(
                {"detail": f"the body is not UTF-8 (byte {exc.start}): send JSON in UTF-8"},
                status.HTTP_400_BAD_REQUEST,
            )
            await response(scope, receive, send)
            return
        body = bytes(read)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


# Room for the JSON around a topic name, the largest body of any route but /infer's.
SMALL_BODY_BYTES = 16 * 1024
# A character of a name as JSON at most: a \uXXXX surrogate pair.
JSON_CHAR_BYTES = 12
# The longest seed word an operator may give, in characters.
SEED_WORD_CHARS = 100


def small_body_limit(name_max: int, seed_words_max: int = 0) -> int:
    """The body limit of every route but /infer's: the longest topic name (``name_max``
    characters, the setting topic_name_max) or the most seed words (``seed_words_max``, the
    setting seed_words_max, each of SEED_WORD_CHARS), each character escaped, and the JSON
    around them."""
    chars = max(name_max, seed_words_max * (SEED_WORD_CHARS + 1))
    return SMALL_BODY_BYTES + JSON_CHAR_BYTES * chars
