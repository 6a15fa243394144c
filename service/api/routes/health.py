"""``GET /healthz`` (the process is alive) and ``GET /readyz`` (it serves topics).

Both answer from memory on the event loop: they never wait on Redis or a thread pool.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status

from service.api.deps import StateDep
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
async def readyz(state: StateDep) -> ReadyOut:
    """200 exactly when ``/topics`` answers 200; 503 saying why otherwise."""
    reason = state.not_ready()
    if reason is not None or state.topics is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, f"not ready: {reason}")
    return ReadyOut(
        status="ready",
        model_version=None if state.model is None else state.model[0],
        docs_seen=state.topics.snapshot.docs_seen,
    )
