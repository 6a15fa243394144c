"""``GET /``: a page for people watching the stream.

The pipeline's health (scrapers, queue, worker, checkpoints, with relative times), perplexity
and topic quality (coherence, diversity) against documents seen, the topics with their coherence
and drift (sorted by either), and one topic's words with weight bars and uncertainty intervals
(deep link ``/#topic=2&sort=coherence``). It polls ``/stats``, ``/perplexity?since=``,
``/topics`` and ``/topics/{id}`` every ``page_refresh_s`` seconds, revalidating with ETags.

Self-contained HTML, CSS and JS (``service/static/index.html``); nothing is loaded from the
internet.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from lda.drift import CHANGED_BITS
from service.api.deps import SettingsDep

router = APIRouter(tags=["page"])


@cache
def _template() -> str:
    page = files("service").joinpath("static", "index.html").read_text(encoding="utf-8")
    return page.replace("__CHANGED_BITS__", repr(CHANGED_BITS))


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def page(settings: SettingsDep) -> HTMLResponse:
    """The dashboard page, refreshing every ``page_refresh_s`` seconds."""
    refresh_ms = str(round(settings.page_refresh_s * 1000))
    return HTMLResponse(_template().replace("__REFRESH_MS__", refresh_ms))
