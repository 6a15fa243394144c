"""``GET /healthz`` (the process is alive) and ``GET /readyz`` (it can serve topics)."""

from __future__ import annotations

import redis
from fastapi import APIRouter, HTTPException, status

from service.api.deps import RedisDep
from service.api.schemas import ErrorOut, HealthOut, ReadyOut
from service.snapshot import read_model_summary

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=HealthOut)
def healthz() -> HealthOut:
    """Always 200 while the process answers; does not touch Redis."""
    return HealthOut(status="ok")


@router.get("/readyz", response_model=ReadyOut, responses={503: {"model": ErrorOut}})
def readyz(client: RedisDep) -> ReadyOut:
    """200 once Redis answers and a model is published; 503 with the reason otherwise."""
    try:
        summary = read_model_summary(client)
    except redis.RedisError as exc:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, f"not ready: Redis is unreachable: {exc}"
        ) from exc
    if summary is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "not ready: the worker has not published a model yet",
        )
    version, docs_seen = summary
    return ReadyOut(status="ready", model_version=version, docs_seen=docs_seen)
