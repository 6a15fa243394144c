"""``GET /topics/events``: the topics' moves (births, merges, retirements), newest first, a page
at a time, from the view's copy of the worker's record (reads/topic_numbers.py), with an ETag.

While K is fixed nothing moves: the list is empty. Registered before ``/topics/{topic_id}``,
whose path would otherwise take ``events`` for a topic id.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from service.api.deps import StateDep
from service.api.http.etags import IF_NONE_MATCH, NOT_MODIFIED, respond
from service.api.http.query_params import MAX_INTEGER, Integer, strict
from service.api.reads.topic_numbers import EVENTS_LIMIT, EVENTS_LIMIT_MAX
from service.api.schemas import INVALID, UNAVAILABLE, TopicEventsOut

router = APIRouter(tags=["topics"])

PAGED = {"limit": Integer(1, EVENTS_LIMIT_MAX), "offset": Integer(0)}


@router.get(
    "/topics/events",
    dependencies=[Depends(strict(PAGED))],
    response_model=TopicEventsOut,
    responses={304: NOT_MODIFIED, **INVALID, **UNAVAILABLE},
    openapi_extra=IF_NONE_MATCH,
)
async def topic_events(
    request: Request,
    state: StateDep,
    limit: Annotated[
        int, Query(ge=1, le=EVENTS_LIMIT_MAX, description="Moves to answer, newest first")
    ] = EVENTS_LIMIT,
    offset: Annotated[int, Query(ge=0, le=MAX_INTEGER, description="Moves to skip")] = 0,
) -> Response:
    """The moves kept, newest first: each one's kind, when (documents seen, time), the topics'
    numbers, and their top words before and after; with the totals by kind."""
    return respond(state.require_topics().events(limit, offset), request)
