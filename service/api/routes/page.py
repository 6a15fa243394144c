"""``GET /``: a page for people watching the stream.

The pipeline's health (scrapers, queue, worker, checkpoints, with relative times), perplexity
and topic quality (coherence, diversity) against documents seen, the topics with their names,
sizes, coherence and drift (sorted by any), and one topic's view: its name, size, words by
relevance with weight bars and uncertainty intervals, the articles behind it and its history
(deep link ``/#topic=2&sort=size&lambda=0.8``). It polls ``/stats``, ``/perplexity?since=``,
``/topics``, ``/topics/{id}`` and ``/topics/{id}/history`` every ``page_refresh_s`` seconds,
revalidating with ETags.

Self-contained HTML, CSS and JS (``service/static/index.html``); nothing is loaded from the
internet.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from lda.config import CHANGED_BITS


@cache
def _template() -> str:
    page = files("service").joinpath("static", "index.html").read_text(encoding="utf-8")
    return page.replace("__CHANGED_BITS__", repr(CHANGED_BITS))


def router(refresh_s: float) -> APIRouter:
    """The page's route: the dashboard, refreshing every ``refresh_s`` seconds (the setting
    page_refresh_s)."""
    routes = APIRouter(tags=["page"])
    refresh_ms = str(round(refresh_s * 1000))

    @routes.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        """The dashboard page."""
        return HTMLResponse(_template().replace("__REFRESH_MS__", refresh_ms))

    return routes
