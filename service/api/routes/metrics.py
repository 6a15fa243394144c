"""``GET /metrics``: Prometheus text, every name prefixed ``streamlda_``.

The state is rendered by the view's refresher (at most ``api_refresh_s`` old; families in
:mod:`service.api.reads.pipeline_status`); request-latency histograms per route
(:mod:`service.api.http.prometheus`) are appended as they stand. Answers 200 even when Redis is
down (``streamlda_redis_up 0``), so dashboards see the outage instead of a failed scrape.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from service.api.deps import StateDep
from service.api.http.prometheus import CONTENT_TYPE

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}}}})
async def metrics(state: StateDep, request: Request) -> Response:
    """Prometheus text exposition of the service's state and of request latencies."""
    latency = request.app.state.latency.render()
    return Response(state.metrics + latency, media_type=CONTENT_TYPE)
