"""``GET /perplexity``: held-out perplexity against documents seen, served from memory."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from service.api.deps import StateDep
from service.api.http.etags import IF_NONE_MATCH, NOT_MODIFIED, respond
from service.api.http.query_params import MAX_INTEGER, SINCE, strict
from service.api.schemas import INVALID, UNAVAILABLE, PerplexityOut

router = APIRouter(tags=["perplexity"])


@router.get(
    "/perplexity",
    dependencies=[Depends(strict(SINCE))],
    response_model=PerplexityOut,
    responses={304: NOT_MODIFIED, **INVALID, **UNAVAILABLE},
    openapi_extra=IF_NONE_MATCH,
)
async def perplexity(
    request: Request,
    state: StateDep,
    since: Annotated[
        int | None,
        Query(
            ge=0,
            le=MAX_INTEGER,
            description="Only points after this many documents (incremental polling)",
        ),
    ] = None,
) -> Response:
    """The latest point and the history (empty before the first evaluation)."""
    return respond(state.require_perplexity().since(since), request)
