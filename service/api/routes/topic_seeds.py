"""``PUT`` and ``DELETE /admin/topics/{topic_id}/seeds``: the seed words operators give topics.

Behind the admin token, as the other admin routes. A topic's seeds are 1 to the setting
seed_words_max words, each tokenised by the learner's rule (lda.vocab.tokenize), and a strength
(the percent of an average topic's tokens each word's pseudo-counts stand for: docs/model.md),
above 0 and at most the setting seed_strength_max (the setting seed_strength
when none is given). They live in Redis (service/store/topic_seeds.py); the worker reads them at
its next step and the snapshot shows the seeds in effect (docs/topics.md, "Seeded topics").
Every refusal is a 422 that says what is wrong: an unknown topic, no word, too many words, a
strength out of range.

Built per app by :func:`router`, because the bounds are settings that belong in the OpenAPI
schema. (No ``from __future__ import annotations`` here: the signature uses local bounds, which
string annotations could not resolve.)
"""

import math
from typing import Annotated

from fastapi import APIRouter, Body, HTTPException, Path, status
from fastapi.exceptions import RequestValidationError
from pydantic import StringConstraints

from service.api.deps import RedisDep, StateDep
from service.api.http.body_limits import SEED_WORD_CHARS
from service.api.http.query_params import MAX_INTEGER
from service.api.reads.refresher import State
from service.api.routes.admin import topic_router
from service.api.schemas import TopicSeedsOut
from service.store.topic_seeds import TopicSeeds, clear_topic_seeds, seed_words, set_topic_seeds

TopicId = Annotated[int, Path(ge=0, le=MAX_INTEGER, description="Topic id, 0 to K-1")]


def _invalid(field: str, message: str) -> RequestValidationError:
    place = ("path", "topic_id") if field == "topic_id" else ("body", field)
    return RequestValidationError([{"loc": place, "msg": message, "type": "value_error"}])


def known_topic(state: State, topic_id: int, default_topics: int) -> None:
    """404 unless ``topic_id`` is a topic of the snapshot served (before one, of the setting
    topics), as for a topic's name."""
    k = state.topics.snapshot.n_topics if state.topics is not None else default_topics
    if not 0 <= topic_id < k:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"no topic {topic_id}: topic ids are 0 to {k - 1}"
        )


def valid_seeds(
    words: list[str], strength: float | None, *, most: int, default: float, strongest: float
) -> TopicSeeds:
    """``words`` as the learner tokenises them (each once) and ``strength`` (``default`` when
    None), if there is a word, at most ``most`` of them, and 0 < strength <= ``strongest``."""
    tokens = seed_words(words)
    if not tokens:
        raise _invalid("words", "no word: give at least one word with a letter")
    if len(tokens) > most:
        raise _invalid("words", f"{len(tokens)} words: the most is {most} (seed_words_max)")
    s = default if strength is None else strength
    if not (math.isfinite(s) and 0 < s <= strongest):
        raise _invalid("strength", f"strength {s}: it must be above 0 and at most {strongest:g}")
    return TopicSeeds(tokens, float(s))


def router(most: int, strongest: float, default: float, topics: int) -> APIRouter:
    """The seeding routes: at most ``most`` words (the setting seed_words_max), a strength up
    to ``strongest`` (seed_strength_max), ``default`` when none is given (seed_strength), and
    ``topics`` before a snapshot says how many there are (the setting topics)."""
    routes = topic_router("Redis is unreachable")

    @routes.put("/topics/{topic_id}/seeds", response_model=TopicSeedsOut)
    def seed_topic(
        words: Annotated[
            list[Annotated[str, StringConstraints(max_length=SEED_WORD_CHARS)]],
            Body(
                min_length=1,
                max_length=most,
                description=f"1 to {most} words (the setting seed_words_max), each tokenised "
                "as the learner's words are",
            ),
        ],
        topic_id: TopicId,
        client: RedisDep,
        state: StateDep,
        strength: Annotated[
            float | None,
            Body(
                gt=0,
                le=strongest,
                description="The percent of an average topic's tokens each seed word's "
                "pseudo-counts stand for (default: the setting seed_strength)",
            ),
        ] = None,
    ) -> TopicSeedsOut:
        """Seed the topic (replacing its seeds, if it had some); in effect at the worker's next
        step, the topic's number pinned from then on."""
        known_topic(state, topic_id, topics)
        seeds = valid_seeds(words, strength, most=most, default=default, strongest=strongest)
        set_topic_seeds(client, topic_id, seeds)
        return TopicSeedsOut(id=topic_id, words=list(seeds.words), strength=seeds.strength)

    @routes.delete("/topics/{topic_id}/seeds", response_model=TopicSeedsOut)
    def unseed_topic(topic_id: TopicId, client: RedisDep, state: StateDep) -> TopicSeedsOut:
        """Remove the topic's seeds (none is fine: the answer is the same)."""
        known_topic(state, topic_id, topics)
        clear_topic_seeds(client, topic_id)
        return TopicSeedsOut(id=topic_id, words=[], strength=None)

    return routes
