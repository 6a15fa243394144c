"""``GET /metrics``: Prometheus text, every name prefixed ``streamlda_``.

Rendered by the view's refresher (at most ``api_refresh_s`` old; families in
:mod:`service.api.live`). Answers 200 even when Redis is down (``streamlda_redis_up 0``), so
dashboards see the outage instead of a failed scrape.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from service.api.deps import StateDep
from service.api.prometheus import CONTENT_TYPE

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}}}})
async def metrics(state: StateDep) -> Response:
    """Prometheus text exposition of the service's state."""
    return Response(state.metrics, media_type=CONTENT_TYPE)
