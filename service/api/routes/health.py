"""``GET /healthz`` (the process is alive) and ``GET /readyz`` (it serves topics).

Both answer from memory on the event loop: they never wait on Redis or a thread pool. Both are
open to anyone, so /readyz says why it is not ready in words only; where Redis is and what its
client said (host, port, user) are added for a request bearing the admin token.
"""

from __future__ import annotations

import secrets

from fastapi import APIRouter, HTTPException, Request, status

from service.api.deps import AdminTokenDep, StateDep
from service.api.schemas import ErrorOut, HealthOut, ReadyOut

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthOut)
async def healthz() -> HealthOut:
    """Always 200 while the process answers; does not touch Redis."""
    return HealthOut(status="ok")


@router.get(
    "/readyz",
    response_model=ReadyOut,
    responses={503: {"model": ErrorOut, "description": "Not serving topics, and why"}},
)
async def readyz(state: StateDep, admin_token: AdminTokenDep, request: Request) -> ReadyOut:
    """200 exactly when ``/topics`` answers 200; 503 saying why otherwise (with the admin token
    as bearer, also where Redis is and what failed)."""
    reason = state.not_ready()
    if reason is not None or state.topics is None:
        detail = f"not ready: {reason}"
        if state.error_detail and _is_admin(request, admin_token):
            detail += f"; {state.error_detail}"
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, detail)
    return ReadyOut(
        status="ready",
        model_version=None if state.model is None else state.model[0],
        docs_seen=state.topics.snapshot.docs_seen,
    )


def _is_admin(request: Request, token: str | None) -> bool:
    """The request bears ``Authorization: Bearer <admin token>`` (never, with no token set)."""
    if not token:
        return False
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and secrets.compare_digest(
        given.strip().encode(), token.encode()
    )
