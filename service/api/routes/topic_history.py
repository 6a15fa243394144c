"""``GET /topics/{topic_id}/history``: one topic over the evaluations the worker kept.

Answered from the view's parsed copy (reads/topic_history.py, refreshed with the snapshot), with
an ETag; the hot path (reads/prerendered.py) answers the same bytes before routing.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response

from service.api.deps import StateDep
from service.api.http.etags import IF_NONE_MATCH, NOT_MODIFIED, respond
from service.api.http.query_params import MAX_INTEGER, TOPIC_ID, TOPIC_NUMBER, strict
from service.api.schemas import GONE, INVALID, UNAVAILABLE, ErrorOut, TopicHistoryOut

router = APIRouter(tags=["topics"])


@router.get(
    "/topics/{topic_id}/history",
    dependencies=[Depends(strict({}, TOPIC_ID))],
    response_model=TopicHistoryOut,
    responses={
        304: NOT_MODIFIED,
        404: {"model": ErrorOut, "description": "No topic with this id"},
        **GONE,
        **INVALID,
        **UNAVAILABLE,
    },
    openapi_extra=IF_NONE_MATCH,
)
async def topic_history(
    request: Request,
    state: StateDep,
    topic_id: Annotated[int, Path(ge=0, le=MAX_INTEGER, description=TOPIC_NUMBER)],
) -> Response:
    """The topic's size, coherence, drift, whether it changed, and top words at each
    evaluation kept, oldest first; 404 for an id outside 0..K-1 (while topics move: one never
    used), 410 for a topic merged or retired."""
    state.require_topics().place(topic_id)
    assert state.history is not None  # read with the topics
    return respond(state.history(topic_id), request)
