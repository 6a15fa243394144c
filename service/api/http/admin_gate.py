"""Admin routes answer 404 (off) or 401 (no or a wrong token) from the request's headers alone.

:class:`AdminGateMiddleware` decides before anything reads the body, so a client without the
token cannot make the API buffer or parse a byte of what it sends; the routes' own dependency
(routes/admin.py) applies the same :func:`refusal` and declares the bearer scheme in the schema.
"""

from __future__ import annotations

import secrets

from fastapi import HTTPException, status
from fastapi.responses import JSONResponse
from fastapi.security.utils import get_authorization_scheme_param
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

ADMIN_PREFIX = "/admin"


def bearer_token(authorization: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header; "" for any other header or none
    (parsed as fastapi's HTTPBearer does)."""
    scheme, token = get_authorization_scheme_param(authorization)
    return token if scheme.lower() == "bearer" else ""


def admin_token_of(setting: str | None) -> str | None:
    """The setting admin_token as it is compared: stripped, as a presented token is (one set
    with a trailing newline still matches); None (admin off) for one of whitespace alone."""
    token = (setting or "").strip()
    return token or None


def refusal(admin_token: str | None, token: str) -> HTTPException | None:
    """The 404 while admin is off (no ``admin_token``), the 401 for a ``token`` that is not it,
    or None: the request may go on. Both are stripped first, and compared in constant time."""
    admin_token = admin_token_of(admin_token)
    if admin_token is None:
        return HTTPException(
            status.HTTP_404_NOT_FOUND,
            "admin endpoints are off: set STREAMLDA_ADMIN_TOKEN to enable them",
        )
    if not secrets.compare_digest(token.strip().encode(), admin_token.encode()):
        return HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "admin endpoints need the header 'Authorization: Bearer <admin token>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return None


def _has_body(headers: Headers) -> bool:
    return headers.get("content-length", "0") != "0" or "transfer-encoding" in headers


class AdminGateMiddleware:
    """ASGI middleware refusing requests under ``/admin`` without the admin token, unread."""

    def __init__(self, app: ASGIApp, *, admin_token: str | None) -> None:
        self.app = app
        self.admin_token = admin_token_of(admin_token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == ADMIN_PREFIX or path.startswith(ADMIN_PREFIX + "/"):
            headers = Headers(scope=scope)
            refused = refusal(self.admin_token, bearer_token(headers.get("authorization")))
            if refused is not None:
                answer_headers = dict(refused.headers or {})
                if _has_body(headers):
                    answer_headers["Connection"] = "close"  # the body is never read
                response = JSONResponse(
                    {"detail": refused.detail}, refused.status_code, headers=answer_headers
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
