"""``GET /stats``: progress of the worker, the queue and the scrapers in one object.

Rendered by the view's refresher, so its live values (queue, heartbeat age) are at most
``api_refresh_s`` old.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from service.api.deps import StateDep
from service.api.http.etags import IF_NONE_MATCH, NOT_MODIFIED, respond
from service.api.schemas import UNAVAILABLE, StatsOut

router = APIRouter(tags=["stats"])


@router.get(
    "/stats",
    response_model=StatsOut,
    responses={304: NOT_MODIFIED, **UNAVAILABLE},
    openapi_extra=IF_NONE_MATCH,
)
async def stats(request: Request, state: StateDep) -> Response:
    """Answers before the first update too (worker fields are then null)."""
    return respond(state.require_stats(), request)
