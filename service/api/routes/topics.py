"""``GET /topics`` and ``GET /topics/{id}``: the top words of each topic, served from memory.

``?estimate=mean`` (the default) gives beta_mean's words, the topics served everywhere else;
``?estimate=sample`` the chain's current sample's. Each body says which. Every topic carries
its coherence and drift as of the latest evaluation; ``?uncertainty=true`` adds each word's
5-95% interval over the chain's recent samples, ``?sort=coherence`` orders the list.

Built per app by :func:`router`, because the bound of ``top`` (the setting topic_words) belongs
in the OpenAPI schema. (No ``from __future__ import annotations`` here: the signatures use
the local bound ``most``, which string annotations could not resolve.)
"""

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, Response, status

from lda.config import Estimate
from service.api.deps import StateDep
from service.api.http.etags import IF_NONE_MATCH, NOT_MODIFIED, respond
from service.api.http.query_params import MAX_INTEGER, TOPIC_ID, strict, topics_query
from service.api.reads.bodies import ONE_TOPIC_TOP, TOPICS_TOP, TopicOrder
from service.api.schemas import (
    ESTIMATE,
    INVALID,
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


def router(most: int) -> APIRouter:
    """The topics routes, ``top`` bounded by ``most`` (the setting topic_words)."""
    routes = APIRouter(tags=["topics"])

    @routes.get(
        "/topics",
        dependencies=[Depends(strict(topics_query(most, one=False)))],
        response_model=TopicsOut,
        responses={304: NOT_MODIFIED, **INVALID, **UNAVAILABLE},
        openapi_extra=IF_NONE_MATCH,
    )
    async def list_topics(
        request: Request,
        state: StateDep,
        top: Annotated[int, Query(ge=1, le=most, description=_TOP)] = min(TOPICS_TOP, most),
        estimate: EstimateQuery = "mean",
        uncertainty: UncertaintyQuery = False,
        sort: Annotated[TopicOrder, Query(description=SORT)] = "id",
    ) -> Response:
        """Every topic with its ``top`` most probable words, coherence and drift."""
        return respond(state.require_topics().all(top, estimate, uncertainty, sort), request)

    @routes.get(
        "/topics/{topic_id}",
        dependencies=[Depends(strict(topics_query(most, one=True), TOPIC_ID))],
        response_model=OneTopicOut,
        responses={
            304: NOT_MODIFIED,
            404: {"model": ErrorOut, "description": "No topic with this id"},
            **INVALID,
            **UNAVAILABLE,
        },
        openapi_extra=IF_NONE_MATCH,
    )
    async def get_topic(
        request: Request,
        state: StateDep,
        topic_id: Annotated[int, Path(ge=0, le=MAX_INTEGER, description="Topic id, 0 to K-1")],
        top: Annotated[int, Query(ge=1, le=most, description=_TOP)] = min(ONE_TOPIC_TOP, most),
        estimate: EstimateQuery = "mean",
        uncertainty: UncertaintyQuery = False,
    ) -> Response:
        """One topic with its ``top`` most probable words, coherence, drift and when it last
        changed; 404 for an id outside 0..K-1."""
        topics = state.require_topics()
        k = topics.snapshot.n_topics
        if not 0 <= topic_id < k:
            raise HTTPException(
                status.HTTP_404_NOT_FOUND,
                f"no topic {topic_id}: topic ids are 0 to {k - 1}",
            )
        return respond(topics.one(topic_id, top, estimate, uncertainty), request)

    return routes
