"""Bodies rendered once with a content ETag, and conditional GETs answered from them (304).

``Cache-Control: no-cache`` lets browsers and proxies keep a copy but ask again each time; the
question (``If-None-Match``) is answered 304 without a body while the content is unchanged. The
ETag hashes the body, so every API instance gives the same tag for the same content.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from fastapi import Request, Response, status

CACHE_CONTROL = "no-cache"
JSON = "application/json"
# Read from the request in respond(), documented here: a declared Header parameter would make
# FastAPI document a 422 that no value of it can cause.
IF_NONE_MATCH = {
    "parameters": [
        {
            "name": "If-None-Match",
            "in": "header",
            "required": False,
            "schema": {"type": "string"},
            "description": "An ETag from an earlier answer: 304 while it is current",
        }
    ]
}
NOT_MODIFIED = {
    "description": "Not modified: If-None-Match names the current ETag (no body)",
    "content": None,
}


@dataclass(frozen=True)
class Rendered:
    """A response body and its strong ETag."""

    body: bytes
    etag: str

    @classmethod
    def of(cls, body: bytes) -> Rendered:
        return cls(body, '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"')


def matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an If-None-Match header names ``etag`` (weak comparison, ``*`` matches all)."""
    if not if_none_match:
        return False
    tags = [tag.strip() for tag in if_none_match.split(",")]
    return "*" in tags or any(tag.removeprefix("W/") == etag for tag in tags)


def respond(rendered: Rendered, request: Request, media_type: str = JSON) -> Response:
    """200 with the body, or 304 when the request's If-None-Match names this version."""
    headers = {"ETag": rendered.etag, "Cache-Control": CACHE_CONTROL}
    # Repeated If-None-Match headers form one list (RFC 9110, 5.3), as in the pre-rendered path.
    if matches(", ".join(request.headers.getlist("if-none-match")), rendered.etag):
        return Response(status_code=status.HTTP_304_NOT_MODIFIED, headers=headers)
    return Response(rendered.body, media_type=media_type, headers=headers)
