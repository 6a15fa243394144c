"""Caps request bodies before anything parses them: 413 beyond the limit.

Checks the declared Content-Length and also counts the bytes that actually arrive (a chunked
or lying client), reading at most ``max_bytes + 1`` before answering.
"""

from __future__ import annotations

from collections.abc import Collection

from fastapi import status
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimitMiddleware:
    """ASGI middleware limiting the body of requests to ``paths`` to ``max_bytes``."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, paths: Collection[str]) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.paths = frozenset(paths)

    def _too_large(self, size: str) -> JSONResponse:
        return JSONResponse(
            {"detail": f"request body is {size} bytes; the limit is {self.max_bytes} bytes"},
            status.HTTP_413_CONTENT_TOO_LARGE,
        )

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
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await self._too_large(f"more than {self.max_bytes}")(scope, receive, send)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)
