"""``PUT`` and ``DELETE /admin/topics/{topic_id}/seeds``: the seed words operators give topics.

Behind the admin token, as the other admin routes. A topic's seeds are 1 to the setting
seed_words_max words, each tokenised by the learner's rule (lda.tokens), each of at most 100
characters before and after, and a strength (the percent of an average topic's tokens each
word's pseudo-counts stand for: docs/model.md), a finite JSON number from
SEED_STRENGTH_MIN to the setting seed_strength_max (the setting seed_strength when none is
given). They live in Redis (service/store/topic_seeds.py); the worker reads them at its next
step and the snapshot shows the seeds in effect (docs/topics.md, "Seeded topics"). Every refusal
is a 422 that says what is wrong: an unknown field or one given twice, no word, too many words,
a word too long, a strength that is no number, not finite or out of range (an unknown topic:
404).

Built per app by :func:`router`, because the bounds are settings that belong in the OpenAPI
schema. (No ``from __future__ import annotations`` here: the signature uses local bounds, which
string annotations could not resolve.)
"""

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Path, Request, status
from fastapi.exceptions import RequestValidationError

from service.api.deps import RedisDep, StateDep
from service.api.http.body_limits import SEED_WORD_CHARS
from service.api.http.query_params import MAX_INTEGER, TOPIC_NUMBER
from service.api.reads.refresher import State
from service.api.routes.admin import topic_router
from service.api.schemas import TopicSeedsOut, seeds_in
from service.store.topic_seeds import (
    SEED_STRENGTH_CEILING,
    SEED_STRENGTH_MIN,
    SEED_TOKEN_CHARS,
    TopicSeeds,
    clear_topic_seeds,
    seed_words,
    set_topic_seeds,
    strength_error,
)

TopicId = Annotated[int, Path(ge=0, le=MAX_INTEGER, description=TOPIC_NUMBER)]


def _invalid(field: str, message: str) -> RequestValidationError:
    place = ("path", "topic_id") if field == "topic_id" else ("body", field)
    return RequestValidationError([{"loc": place, "msg": message, "type": "value_error"}])


def known_topic(state: State, topic_id: int, default_topics: int) -> None:
    """404 unless ``topic_id`` is a live topic of the snapshot served (410: one gone; before a
    snapshot, one of the setting topics), as for a topic's name."""
    if state.topics is not None:
        state.topics.place(topic_id)
        return
    k = default_topics
    if not 0 <= topic_id < k:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"no topic {topic_id}: topic ids are 0 to {k - 1}"
        )


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise _invalid(twice[0], f"{twice[0]!r} is given twice: give each field once")
    return dict(pairs)


async def no_key_twice(request: Request) -> None:
    """422 for a body that gives a field twice (JSON parsers keep the last one silently; the
    body was read and bounded already)."""
    try:
        json.loads(await request.body(), object_pairs_hook=_once)
    except (ValueError, RecursionError):
        return  # not JSON: the body's own validation says so


def valid_seeds(
    words: list[str], strength: float | None, *, most: int, default: float, strongest: float
) -> TopicSeeds:
    """``words`` as the learner tokenises them (each once, each token of at most
    SEED_TOKEN_CHARS characters) and ``strength`` (``default`` when None), if there is a word,
    at most ``most`` of them, and SEED_STRENGTH_MIN <= strength <= ``strongest``."""
    tokens = seed_words(words)
    if not tokens:
        raise _invalid("words", "no word: give at least one word with a letter")
    if len(tokens) > most:
        raise _invalid("words", f"{len(tokens)} words: the most is {most} (seed_words_max)")
    long = next((t for t in tokens if len(t) > SEED_TOKEN_CHARS), None)
    if long is not None:
        raise _invalid(
            "words",
            f"a word of {len(long)} characters once tokenised: the most is {SEED_TOKEN_CHARS}",
        )
    s = default if strength is None else strength
    wrong = strength_error(s, strongest)
    if wrong is not None:
        raise _invalid("strength", wrong)
    return TopicSeeds(tokens, float(s))


def router(most: int, strongest: float, default: float, topics: int) -> APIRouter:
    """The seeding routes: at most ``most`` words (the setting seed_words_max), a strength up
    to ``strongest`` (seed_strength_max, at most SEED_STRENGTH_CEILING), ``default`` when none
    is given (seed_strength), and ``topics`` before a snapshot says how many there are (the
    setting topics)."""
    routes = topic_router("Redis is unreachable")
    strongest = min(strongest, SEED_STRENGTH_CEILING)
    body_model = seeds_in(most, SEED_WORD_CHARS, SEED_STRENGTH_MIN, strongest)

    @routes.put(
        "/topics/{topic_id}/seeds",
        response_model=TopicSeedsOut,
        dependencies=[Depends(no_key_twice)],
    )
    def seed_topic(
        seeds: body_model,  # type: ignore[valid-type]
        topic_id: TopicId,
        client: RedisDep,
        state: StateDep,
    ) -> TopicSeedsOut:
        """Seed the topic (replacing its seeds, if it had some); in effect at the worker's next
        step, the topic's number pinned from then on."""
        known_topic(state, topic_id, topics)
        given = valid_seeds(
            seeds.words,  # type: ignore[attr-defined]
            seeds.strength,  # type: ignore[attr-defined]
            most=most,
            default=default,
            strongest=strongest,
        )
        set_topic_seeds(client, topic_id, given)
        return TopicSeedsOut(id=topic_id, words=list(given.words), strength=given.strength)

    @routes.delete("/topics/{topic_id}/seeds", response_model=TopicSeedsOut)
    def unseed_topic(topic_id: TopicId, client: RedisDep, state: StateDep) -> TopicSeedsOut:
        """Remove the topic's seeds (none is fine: the answer is the same)."""
        known_topic(state, topic_id, topics)
        clear_topic_seeds(client, topic_id)
        return TopicSeedsOut(id=topic_id, words=[], strength=None)

    return routes
