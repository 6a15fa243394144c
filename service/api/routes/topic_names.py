"""``PUT`` and ``DELETE /admin/topics/{topic_id}/name``: the names operators give topics.

Behind the admin token, as the other admin routes. A name is any text, its surrounding
whitespace dropped, of 1 to the setting topic_name_max characters; it lives in Redis
(service/store/topic_names.py), so every API process and every restart serves it. A write
returns once the view has read it back, so the next read shows it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, Request, status
from fastapi.exceptions import RequestValidationError

from service.api.deps import RedisDep, StateDep
from service.api.http.query_params import MAX_INTEGER, TOPIC_ID, strict
from service.api.reads.refresher import State
from service.api.routes.admin import require_admin
from service.api.schemas import INVALID, ErrorOut, TopicNameIn, TopicNameOut
from service.store.topic_names import clear_topic_name, set_topic_name

router = APIRouter(
    prefix="/admin",
    tags=["admin"],
    dependencies=[Depends(require_admin), Depends(strict({}, TOPIC_ID))],
    responses={
        401: {"model": ErrorOut, "description": "Missing or wrong bearer token"},
        404: {"model": ErrorOut, "description": "Admin endpoints are off, or no such topic"},
        **INVALID,
        503: {"model": ErrorOut, "description": "Redis is unreachable, or no topics yet"},
    },
)

TopicId = Annotated[int, Path(ge=0, le=MAX_INTEGER, description="Topic id, 0 to K-1")]


def _known(state: State, topic_id: int) -> None:
    """404 unless ``topic_id`` is a topic of the snapshot served (503 before one)."""
    k = state.require_topics().snapshot.n_topics
    if not 0 <= topic_id < k:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"no topic {topic_id}: topic ids are 0 to {k - 1}"
        )


def _invalid(message: str) -> RequestValidationError:
    error = {"loc": ("body", "name"), "msg": message, "type": "value_error"}
    return RequestValidationError([error])


def valid_name(text: str, most: int) -> str:
    """``text`` without its surrounding whitespace, if 1 to ``most`` characters of UTF-8."""
    name = text.strip()
    if not name:
        raise _invalid("a name needs a character other than whitespace")
    if len(name) > most:
        raise _invalid(f"{len(name)} characters: the most is {most}")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise _invalid("not text: it holds a lone surrogate") from None
    return name


def _answer(request: Request, topic_id: int, name: str | None) -> TopicNameOut:
    """The answer once the view has read the change (so the next read shows it)."""
    request.app.state.view.wait_fresh(request.app.state.redis_timeout)
    return TopicNameOut(id=topic_id, name=name)


@router.put("/topics/{topic_id}/name", response_model=TopicNameOut)
def name_topic(
    body: TopicNameIn, topic_id: TopicId, client: RedisDep, state: StateDep, request: Request
) -> TopicNameOut:
    """Name the topic (replacing its name, if it had one)."""
    _known(state, topic_id)
    name = valid_name(body.name, request.app.state.topic_name_max)
    set_topic_name(client, topic_id, name)
    return _answer(request, topic_id, name)


@router.delete("/topics/{topic_id}/name", response_model=TopicNameOut)
def unname_topic(
    topic_id: TopicId, client: RedisDep, state: StateDep, request: Request
) -> TopicNameOut:
    """Remove the topic's name (none is fine: the answer is the same)."""
    _known(state, topic_id)
    clear_topic_name(client, topic_id)
    return _answer(request, topic_id, None)
