"""``GET /perplexity``: held-out perplexity against documents seen."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from service.api.deps import RedisDep
from service.api.schemas import PerplexityOut, PerplexityPointOut, timestamp
from service.snapshot import PerplexityPoint, latest_perplexity, read_perplexity

router = APIRouter(tags=["perplexity"])


def _point(p: PerplexityPoint) -> PerplexityPointOut:
    return PerplexityPointOut(
        docs_seen=p.docs_seen,
        perplexity=p.perplexity,
        perplexity_avg=p.perplexity_avg,
        at=timestamp(p.at),  # type: ignore[arg-type]
    )


@router.get("/perplexity", response_model=PerplexityOut)
def perplexity(
    client: RedisDep,
    since: Annotated[
        int | None,
        Query(ge=0, description="Only points after this many documents (incremental polling)"),
    ] = None,
) -> PerplexityOut:
    """The latest point and the history (empty before the first evaluation)."""
    latest = latest_perplexity(client)
    return PerplexityOut(
        latest=None if latest is None else _point(latest),
        history=[_point(p) for p in read_perplexity(client, since)],
    )
