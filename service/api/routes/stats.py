"""``GET /stats``: progress of the worker, the queue and the scrapers in one object.

Rendered by the view's refresher, so its live values (queue, heartbeat age) are at most
``api_refresh_s`` old.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from service.api.conditional import NOT_MODIFIED, respond
from service.api.deps import IfNoneMatch, StateDep
from service.api.schemas import UNAVAILABLE, StatsOut

router = APIRouter(tags=["stats"])


@router.get("/stats", response_model=StatsOut, responses={304: NOT_MODIFIED, **UNAVAILABLE})
async def stats(state: StateDep, if_none_match: IfNoneMatch = None) -> Response:
    """Answers before the first update too (worker fields are then null)."""
    return respond(state.require_stats(), if_none_match)
