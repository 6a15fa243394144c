"""Reads request bodies before anything parses them, within a size and a time limit.

413 beyond ``max_bytes``: the declared Content-Length is checked, and the bytes that actually
arrive are counted too (a chunked or lying client), reading at most ``max_bytes + 1``. 408 when
the whole body has not arrived within ``timeout_s`` (a slow or stalled client frees its place
instead of holding it). 400 when the body is not UTF-8 (JSON's only encoding on the wire). The
app then gets the body whole, at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection

from fastapi import status
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimitMiddleware:
    """ASGI middleware reading the body of requests to ``paths`` within its limits."""

    def __init__(
        self, app: ASGIApp, *, max_bytes: int, timeout_s: float, paths: Collection[str]
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.paths = frozenset(paths)

    def _too_large(self, size: str) -> JSONResponse:
        return JSONResponse(
            {"detail": f"request body is {size} bytes; the limit is {self.max_bytes} bytes"},
            status.HTTP_413_CONTENT_TOO_LARGE,
        )

    async def _read(self, receive: Receive) -> bytearray | JSONResponse | None:
        """The body, the error to answer, or None when the client went away."""
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                return self._too_large(f"more than {self.max_bytes}")
        return body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                response = JSONResponse(
                    {"detail": "Content-Length is not a number"}, status.HTTP_400_BAD_REQUEST
                )
                await response(scope, receive, send)
                return
            if int(declared) > self.max_bytes:
                await self._too_large(declared.decode())(scope, receive, send)
                return
        try:
            async with asyncio.timeout(self.timeout_s):
                read = await self._read(receive)
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
