"""``GET /topics/{id}/articles``, ``POST /similar`` and ``GET /articles/{id}/similar``: the
articles the worker keeps (its reservoir's and those listed behind the topics), found by topic
and by likeness of topic proportions (docs/topics.md, "Searching the kept articles").

The index comes with the published model and is built once per version
(:mod:`service.api.search.index`). A topic's first ``most`` articles and an article's ``most``
nearest are rendered once per version and kept, bounded in bytes
(:mod:`service.api.search.answers`); every ``limit`` and ``offset`` within them is a slice.
Work not kept (a miss, a page past the first ``most``) takes one of ``queue`` slots, and an
article's neighbours are measured on the inference threads, as ``/similar``'s are: past the
slots, 503 with Retry-After. ``/similar`` folds its text in on the inference threads, batched
with whatever waits there (the same fixed point as ``/infer``), under ``/infer``'s cap.

Built per app by :func:`router`, because the bound of ``limit`` (the setting search_limit_max)
belongs in the OpenAPI schema. (No ``from __future__ import annotations`` here: the body's
model is built for that bound, which string annotations could not resolve.)
"""

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import orjson
import redis
from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, Response, status
from fastapi.concurrency import run_in_threadpool

from lda.topic_ids import position
from service.api.deps import ModelCacheDep, RedisDep, StateDep
from service.api.http.etags import IF_NONE_MATCH, JSON, NOT_MODIFIED, respond
from service.api.http.query_params import MAX_INTEGER, TOPIC_ID, TOPIC_NUMBER, Integer, strict
from service.api.infer.admission import Slots
from service.api.infer.batcher import Batcher
from service.api.infer.model_cache import LoadedModel, ModelCache
from service.api.reads.refresher import State
from service.api.reads.topic_numbers import not_live
from service.api.routes.infer import ERRORS as INFER_ERRORS
from service.api.routes.infer import fold_in
from service.api.schemas import GONE, INVALID, ErrorOut
from service.api.search.answers import CACHE_BYTES, Kept, KeptAnswers, rendered_answer
from service.api.search.index import Found, SearchIndex
from service.api.search.schemas import (
    LIMIT,
    ArticleSimilarOut,
    SimilarOut,
    TopicArticlesOut,
    similar_in,
)
from service.store.article_limits import ARTICLE_ID_CHARS  # what every source queues at most

QUERY_TOPICS = 5  # the text's largest proportions in /similar's answer
NO_INDEX = (
    "no kept articles: the worker publishes them with its model (search off, or a worker "
    "before search)"
)
UNAVAILABLE: dict[int | str, dict[str, object]] = {
    503: {"model": ErrorOut, "description": "Redis is unreachable, or no kept articles yet"}
}


@dataclass(frozen=True)
class Searched:
    """A text folded in for search: the model, its proportions, its tokens used and ignored,
    and its distance to every kept article (None: no index)."""

    loaded: LoadedModel
    pi: np.ndarray
    tokens: tuple[int, int]
    nearest: list[Found] | None  # the ``most`` nearest kept articles, nearest first


def search_texts(texts: Sequence[str], most: int, **fold: Any) -> list[Searched]:
    """Each text folded in (:func:`~service.api.routes.infer.fold_in`'s ``fold`` arguments)
    and its ``most`` nearest kept articles, on the inference thread."""
    folded = fold_in(texts, **fold)
    index = folded.loaded.search.get()
    return [
        Searched(
            folded.loaded,
            folded.pi[i],
            folded.tokens[i],
            None if index is None else index.nearest(index.distances(folded.pi[i]), most),
        )
        for i in range(len(texts))
    ]


def _index(loaded: LoadedModel | None) -> SearchIndex:
    index = None if loaded is None else loaded.search.get()
    if index is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, NO_INDEX)
    return index


def _loaded(cache: ModelCache, client: redis.Redis) -> tuple[LoadedModel, SearchIndex]:
    """The current model and its index (loaded or built here, off the event loop); 503
    without."""
    loaded = cache.get(client)
    index = _index(loaded)
    assert loaded is not None
    return loaded, index


def _head(loaded: LoadedModel) -> dict[str, Any]:
    return {"model_version": loaded.model.version, "docs_seen": loaded.model.docs_seen}


def _rendered(index: SearchIndex, found: Sequence[Found]) -> tuple[bytes, ...]:
    return tuple(orjson.dumps(index.article(f)) for f in found)


def _place(loaded: LoadedModel, index: SearchIndex, state: State, number: int) -> int:
    """Topic ``number``'s place in the published model; 404 or, while topics move, the 410 of
    a number gone (as the view's record of the numbers says)."""
    k = position(loaded.model.topic_ids, number)
    if k is not None:
        return k
    if loaded.model.fixed:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"no topic {number}: topic ids are 0 to {index.n_topics - 1}"
        )
    topics = state.require_topics()
    raise not_live(topics.snapshot, topics.numbers, number)


def _topic_kept(index: SearchIndex, topic: int, most: int) -> Kept:
    """The topic's first ``most`` articles, rendered, and how many it lists."""
    return Kept(_rendered(index, index.topic(topic, most)), index.listed(topic))


def _neighbours_kept(index: SearchIndex, row: int, most: int) -> Kept:
    """Row ``row``'s ``most`` nearest articles, rendered."""
    found = _rendered(index, index.neighbours(row, most))
    return Kept(found, len(found))


def router(
    most: int, *, queue: int, retry_after_s: int, cache_bytes: int = CACHE_BYTES
) -> APIRouter:
    """The search routes, ``limit`` bounded by ``most`` (the setting search_limit_max), at most
    ``queue`` answers not kept being made at once (the setting infer_queue; more: 503 with
    ``retry_after_s``, the setting infer_retry_after_s), answers kept up to ``cache_bytes``."""
    routes = APIRouter(tags=["search"])
    answers = KeptAnswers(cache_bytes)
    slots = Slots(
        queue, retry_after_s, f"{queue} search answers are being made (STREAMLDA_INFER_QUEUE)"
    )
    body_model = similar_in(most)
    limit_query = Query(ge=1, le=most, description="Articles to answer")
    paged = {"limit": Integer(1, most), "offset": Integer(0)}
    busy = {
        "model": ErrorOut,
        "description": "Redis is unreachable, no kept articles yet, or "
        "busy: too many answers being made (Retry-After)",
    }

    @routes.get(
        "/topics/{topic_id}/articles",
        dependencies=[Depends(strict(paged, TOPIC_ID))],
        response_model=TopicArticlesOut,
        responses={
            304: NOT_MODIFIED,
            404: {"model": ErrorOut, "description": "No topic with this id"},
            **GONE,
            **INVALID,
            503: busy,
        },
        openapi_extra=IF_NONE_MATCH,
    )
    async def topic_articles(
        request: Request,
        cache: ModelCacheDep,
        client: RedisDep,
        state: StateDep,
        topic_id: Annotated[int, Path(ge=0, le=MAX_INTEGER, description=TOPIC_NUMBER)],
        limit: Annotated[int, limit_query] = min(LIMIT, most),
        offset: Annotated[int, Query(ge=0, le=MAX_INTEGER, description="Articles to skip")] = 0,
    ) -> Response:
        """The kept articles most surely about the topic (its share's lower bound given the
        article's length), ``offset`` onwards; 404 for an id outside 0..K-1 (while topics
        move: one never used), 410 for a topic merged or retired."""
        loaded, index = await run_in_threadpool(_loaded, cache, client)
        k = _place(loaded, index, state, topic_id)
        key, version = ("topic", k), loaded.model.version
        kept = answers.get(version, key)
        if kept is None:
            with slots.taken():
                kept = await run_in_threadpool(_topic_kept, index, k, most)
            answers.put(version, key, kept)
        if offset + limit <= len(kept.articles) or len(kept.articles) == kept.total:
            found = kept.articles[offset : offset + limit]
        else:  # past the first ``most``: a slice of the index, rendered and not kept
            with slots.taken():
                found = await run_in_threadpool(_rendered, index, index.topic(k, limit, offset))
        head = {"topic": topic_id, **_head(loaded), "total": kept.total, "offset": offset}
        return respond(rendered_answer(head, found), request)

    @routes.post(
        "/similar",
        response_model=SimilarOut,
        responses={**INFER_ERRORS, **UNAVAILABLE, 503: INFER_ERRORS[503]},
    )
    async def similar(body: body_model, request: Request) -> Response:  # type: ignore[valid-type]
        """The kept articles whose topic proportions are nearest the text's (Hellinger
        distance), nearest first."""
        batcher: Batcher[Searched] = request.app.state.search_batcher
        (query,) = await batcher([body.text])  # type: ignore[attr-defined]
        index = _index(query.loaded)
        assert query.nearest is not None
        found = query.nearest[: body.limit]  # type: ignore[attr-defined]
        order = np.argsort(-query.pi, kind="stable")[:QUERY_TOPICS]
        answer = {
            **_head(query.loaded),
            "tokens": query.tokens[0],
            "ignored_tokens": query.tokens[1],
            "topics": [
                {"id": query.loaded.model.number(int(t)), "weight": float(query.pi[t])}
                for t in order
            ],
            "articles": [index.article(f) for f in found],
        }
        return Response(orjson.dumps(answer), media_type=JSON)

    @routes.get(
        "/articles/{article_id}/similar",
        dependencies=[Depends(strict({"limit": Integer(1, most)}))],
        response_model=ArticleSimilarOut,
        responses={
            304: NOT_MODIFIED,
            404: {"model": ErrorOut, "description": "No kept article with this id"},
            **INVALID,
            503: busy,
        },
        openapi_extra=IF_NONE_MATCH,
    )
    async def article_similar(
        request: Request,
        cache: ModelCacheDep,
        client: RedisDep,
        article_id: Annotated[
            str,
            Path(
                min_length=1,
                max_length=ARTICLE_ID_CHARS,
                description="The article's id in its source (Wikipedia's page id)",
            ),
        ],
        limit: Annotated[int, limit_query] = min(LIMIT, most),
    ) -> Response:
        """The kept articles nearest a kept one (Hellinger distance between their kept
        shares), itself left out; 404 for an article the service does not keep."""
        loaded, index = await run_in_threadpool(_loaded, cache, client)
        row = index.by_id.get(article_id)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "no kept article with this id")
        key, version = ("article", article_id), loaded.model.version
        kept = answers.get(version, key)
        if kept is None:
            with slots.taken():  # measured on the inference threads, as /similar's distances
                pool = request.app.state.infer_pool
                loop = asyncio.get_running_loop()
                kept = await loop.run_in_executor(pool, _neighbours_kept, index, row, most)
            answers.put(version, key, kept)
        head = {**_head(loaded), "article": index.article(Found(row))}
        return respond(rendered_answer(head, kept.articles[:limit]), request)

    return routes
