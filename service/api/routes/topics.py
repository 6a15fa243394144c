"""``GET /topics`` and ``GET /topics/{id}``: the top words of each topic, served from memory.

``?estimate=mean`` (the default) gives beta_mean's words, the topics served everywhere else;
``?estimate=sample`` the chain's current sample's. Each body says which. Every topic carries
its coherence, drift and size as of the latest evaluation, its name and a suggested name;
``?uncertainty=true`` adds each word's 5-95% interval over the chain's recent samples,
``?sort=coherence`` or ``?sort=size`` orders the list, and ``?relevance=0.6`` ranks the words
by relevance in the published model (reads/relevance.py), each ranking and body computed once
per model version and lambda.

A second way answers the plain polls of these paths: the pre-rendered layer
(reads/prerendered.py) sends the same cached bytes before routing, at ~6 us of CPU an answer
against ~400 us through here. These routes stay the API: the OpenAPI schema, FastAPI's 422s,
the 404, relevance (ranked on the thread pool, with its 409 and 503s), CORS, and every query
the layer leaves to them. The two agree byte for byte (tests/service/api/test_topics_paths.py).

Built per app by :func:`router`, because the bound of ``top`` (the setting topic_words) belongs
in the OpenAPI schema. (No ``from __future__ import annotations`` here: the signatures use
the local bound ``most``, which string annotations could not resolve.)
"""

from typing import Annotated

import redis
from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, Response, status
from fastapi.concurrency import run_in_threadpool

from lda.config import Estimate
from lda.topic_ids import saved
from service.api.deps import ModelCacheDep, RedisDep, StateDep
from service.api.http.etags import IF_NONE_MATCH, NOT_MODIFIED, respond
from service.api.http.query_params import (
    MAX_INTEGER,
    TOPIC_ID,
    TOPIC_NUMBER,
    strict,
    topics_query,
)
from service.api.infer.model_cache import ModelCache
from service.api.reads.bodies import ONE_TOPIC_TOP, TOPICS_TOP, TopicOrder
from service.api.reads.refresher import TopicsView
from service.api.reads.relevance import Ranking
from service.api.schemas import (
    ESTIMATE,
    GONE,
    INVALID,
    RELEVANCE,
    SORT,
    UNAVAILABLE,
    UNCERTAINTY,
    ErrorOut,
    OneTopicOut,
    TopicsOut,
)

_TOP = "Words per topic, most probable first (at most the setting topic_words)"
EstimateQuery = Annotated[Estimate, Query(description=ESTIMATE)]
UncertaintyQuery = Annotated[bool, Query(description=UNCERTAINTY)]
# Both parameters are valid alone; the published model holds beta_mean only.
CONFLICT: dict[int | str, dict[str, object]] = {
    409: {
        "model": ErrorOut,
        "description": "relevance ranks the published beta_mean: not with estimate=sample",
    }
}
RelevanceQuery = Annotated[float | None, Query(ge=0, le=1, description=RELEVANCE)]


async def ranking(
    lam: float | None,
    estimate: Estimate,
    topics: TopicsView,
    cache: ModelCache,
    client: redis.Redis,
) -> Ranking | None:
    """The published model's relevance ranking at ``lam`` (None without one): loaded and
    computed on the thread pool the first time, from the model's cache after."""
    if lam is None:
        return None
    if estimate != "mean":
        raise HTTPException(status.HTTP_409_CONFLICT, CONFLICT[409]["description"])
    loaded = await run_in_threadpool(cache.get, client)
    if loaded is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "no model yet to rank words by relevance: the worker has not published one",
        )
    model_ids, snapshot_ids = saved(loaded.model.topic_ids), saved(topics.snapshot.topic_ids)
    if loaded.model.n_topics != topics.snapshot.n_topics or model_ids != snapshot_ids:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            f"the published model has {loaded.model.n_topics} topics and the snapshot "
            f"{topics.snapshot.n_topics}"
            + ("" if model_ids == snapshot_ids else ", numbered differently")
            + ": ask again once the worker has published both",
        )
    return await run_in_threadpool(loaded.relevance.get, lam)


def router(most: int) -> APIRouter:
    """The topics routes, ``top`` bounded by ``most`` (the setting topic_words)."""
    routes = APIRouter(tags=["topics"])

    @routes.get(
        "/topics",
        dependencies=[Depends(strict(topics_query(most, one=False)))],
        response_model=TopicsOut,
        responses={304: NOT_MODIFIED, **CONFLICT, **INVALID, **UNAVAILABLE},
        openapi_extra=IF_NONE_MATCH,
    )
    async def list_topics(
        request: Request,
        state: StateDep,
        cache: ModelCacheDep,
        client: RedisDep,
        top: Annotated[int, Query(ge=1, le=most, description=_TOP)] = min(TOPICS_TOP, most),
        estimate: EstimateQuery = "mean",
        uncertainty: UncertaintyQuery = False,
        sort: Annotated[TopicOrder, Query(description=SORT)] = "id",
        relevance: RelevanceQuery = None,
    ) -> Response:
        """Every topic with its ``top`` most probable (or most relevant) words, coherence,
        drift, size and names."""
        topics = state.require_topics()
        ranked = await ranking(relevance, estimate, topics, cache, client)
        return respond(topics.all(top, estimate, uncertainty, sort, ranked), request)

    @routes.get(
        "/topics/{topic_id}",
        dependencies=[Depends(strict(topics_query(most, one=True), TOPIC_ID))],
        response_model=OneTopicOut,
        responses={
            304: NOT_MODIFIED,
            404: {"model": ErrorOut, "description": "No topic with this id"},
            **GONE,
            **CONFLICT,
            **INVALID,
            **UNAVAILABLE,
        },
        openapi_extra=IF_NONE_MATCH,
    )
    async def get_topic(
        request: Request,
        state: StateDep,
        cache: ModelCacheDep,
        client: RedisDep,
        topic_id: Annotated[int, Path(ge=0, le=MAX_INTEGER, description=TOPIC_NUMBER)],
        top: Annotated[int, Query(ge=1, le=most, description=_TOP)] = min(ONE_TOPIC_TOP, most),
        estimate: EstimateQuery = "mean",
        uncertainty: UncertaintyQuery = False,
        relevance: RelevanceQuery = None,
    ) -> Response:
        """One topic with its ``top`` most probable (or most relevant) words, coherence, drift,
        size, names, the articles behind it and when it last changed; 404 for an id outside
        0..K-1 (while topics move: one never used), 410 for a topic merged or retired."""
        topics = state.require_topics()
        k = topics.place(topic_id)
        ranked = await ranking(relevance, estimate, topics, cache, client)
        return respond(topics.one(k, top, estimate, uncertainty, ranked), request)

    return routes
