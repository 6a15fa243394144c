"""Caps the requests to some paths taken at once (/infer's, the export's): past the cap, 503 with
Retry-After; and :class:`Slots`, the same cap on work a route decides it must do (a search
answer not kept).

Decided when the request arrives, before its body is read, so a burst of large bodies costs no
memory; the count covers a request until its response is sent (reading its body, waiting for an
inference thread, running). The refusal is prepared once and sent without touching the body:
refused clients that retry at once cost the event loop little.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager

from fastapi import HTTPException, status
from starlette.types import ASGIApp, Receive, Scope, Send

from service.api.http.compact_json import dumps


class ConcurrencyLimitMiddleware:
    """ASGI middleware admitting at most ``limit`` requests to ``paths`` at once."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        limit: int,
        retry_after_s: int,
        paths: Collection[str],
        taken: str | None = None,
    ) -> None:
        """``taken`` says what is busy, for the refusal's message (by default the /infer
        requests and their setting)."""
        self.app = app
        self.limit = limit
        self.paths = frozenset(paths)
        self.in_progress = 0  # one event loop: no lock needed
        if taken is None:
            taken = f"{limit} /infer requests are taken (STREAMLDA_INFER_QUEUE)"
        body = dumps({"detail": f"busy: {taken}; retry in {retry_after_s} s"})
        self._start = {
            "type": "http.response.start",
            "status": status.HTTP_503_SERVICE_UNAVAILABLE,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", str(retry_after_s).encode()),
            ],
        }
        self._body = {"type": "http.response.body", "body": body}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        if self.in_progress >= self.limit:
            await send(self._start)
            await send(self._body)
            return
        self.in_progress += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_progress -= 1


class Slots:
    """At most ``limit`` pieces of costly work taken at once, in an app's routes (the search
    answers not kept): past it, 503 with Retry-After at once. Used from the event loop only."""

    def __init__(self, limit: int, retry_after_s: int, taken: str) -> None:
        self.limit = limit
        self.in_use = 0
        self.detail = f"busy: {taken}; retry in {retry_after_s} s"
        self.headers = {"Retry-After": str(retry_after_s)}

    @contextmanager
    def taken(self) -> Iterator[None]:
        """Hold a slot for the block; the 503 when none is free."""
        if self.in_use >= self.limit:
            raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, self.detail, self.headers)
        self.in_use += 1
        try:
            yield
        finally:
            self.in_use -= 1
