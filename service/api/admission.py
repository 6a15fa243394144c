"""Caps the requests to some paths in progress at once: past the cap, 503 with Retry-After.

Decided when the request arrives, before its body is read, so a burst of large bodies costs
no memory; the count covers a request until its response is sent.
"""

from __future__ import annotations

from collections.abc import Collection

from fastapi import status
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send


class ConcurrencyLimitMiddleware:
    """ASGI middleware admitting at most ``limit`` requests to ``paths`` at once."""

    def __init__(
        self, app: ASGIApp, *, limit: int, retry_after_s: int, paths: Collection[str]
    ) -> None:
        self.app = app
        self.limit = limit
        self.retry_after_s = retry_after_s
        self.paths = frozenset(paths)
        self.in_progress = 0  # one event loop: no lock needed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        if self.in_progress >= self.limit:
            busy = JSONResponse(
                {
                    "detail": f"busy: {self.limit} {scope['path']} requests are in progress "
                    f"(STREAMLDA_INFER_CONCURRENCY); retry in {self.retry_after_s} s"
                },
                status.HTTP_503_SERVICE_UNAVAILABLE,
                headers={"Retry-After": str(self.retry_after_s)},
            )
            await busy(scope, receive, send)
            return
        self.in_progress += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_progress -= 1
