"""``PUT`` and ``DELETE /admin/topics/{topic_id}/name``: the names operators give topics.

Behind the admin token, as the other admin routes. A name is any text, its surrounding
whitespace dropped, of 1 to the setting topic_name_max characters; it lives in Redis
(service/store/topic_names.py), so every API process and every restart serves it. A write
returns once the view has read it back, so the next read shows it.

Built per app by :func:`router`, because the bound of a name (the setting topic_name_max)
belongs in the OpenAPI schema. (No ``from __future__ import annotations`` here: the signature
uses the local bound ``most``, which string annotations could not resolve.)
"""

from typing import Annotated

from fastapi import APIRouter, Body, Path, Request
from fastapi.exceptions import RequestValidationError

from service.api.deps import RedisDep, StateDep
from service.api.http.query_params import MAX_INTEGER, TOPIC_NUMBER
from service.api.reads.refresher import State
from service.api.routes.admin import topic_router
from service.api.schemas import TopicNameOut
from service.store.topic_names import clear_topic_name, set_topic_name

NAME = (
    "Any text with a character other than whitespace, at most the setting topic_name_max "
    "characters; its surrounding whitespace is dropped"
)
TopicId = Annotated[int, Path(ge=0, le=MAX_INTEGER, description=TOPIC_NUMBER)]


def _known(state: State, topic_id: int) -> None:
    """404 unless ``topic_id`` is a live topic of the snapshot served (410: one gone; 503
    before a snapshot)."""
    state.require_topics().place(topic_id)


def _invalid(message: str) -> RequestValidationError:
    error = {"loc": ("body", "name"), "msg": message, "type": "value_error"}
    return RequestValidationError([error])


def valid_name(text: str, most: int) -> str:
    """``text`` without its surrounding whitespace, if it was at most ``most`` characters and
    UTF-8 with a character other than whitespace (the schema checks the same first)."""
    if len(text) > most:
        raise _invalid(f"{len(text)} characters: the most is {most}")
    name = text.strip()
    if not name:
        raise _invalid("a name needs a character other than whitespace")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise _invalid("not text: it holds a lone surrogate") from None
    return name


def _answer(request: Request, topic_id: int, name: str | None) -> TopicNameOut:
    """The answer once the view has read the change (so the next read shows it)."""
    request.app.state.view.wait_fresh(request.app.state.redis_timeout)
    return TopicNameOut(id=topic_id, name=name)


def router(most: int) -> APIRouter:
    """The naming routes, a name bounded by ``most`` characters (the setting topic_name_max)."""
    routes = topic_router("Redis is unreachable, or no topics yet")

    @routes.put("/topics/{topic_id}/name", response_model=TopicNameOut)
    def name_topic(
        name: Annotated[
            str, Body(embed=True, min_length=1, max_length=most, pattern=r"\S", description=NAME)
        ],
        topic_id: TopicId,
        client: RedisDep,
        state: StateDep,
        request: Request,
    ) -> TopicNameOut:
        """Name the topic (replacing its name, if it had one)."""
        _known(state, topic_id)
        named = valid_name(name, most)
        set_topic_name(client, topic_id, named)
        return _answer(request, topic_id, named)

    @routes.delete("/topics/{topic_id}/name", response_model=TopicNameOut)
    def unname_topic(
        topic_id: TopicId, client: RedisDep, state: StateDep, request: Request
    ) -> TopicNameOut:
        """Remove the topic's name (none is fine: the answer is the same)."""
        _known(state, topic_id)
        clear_topic_name(client, topic_id)
        return _answer(request, topic_id, None)

    return routes
