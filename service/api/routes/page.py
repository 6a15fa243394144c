"""``GET /``: a page for people: the topics and a self-refreshing perplexity plot.

Self-contained HTML, CSS and JS (``service/static/index.html``); nothing is loaded from the
internet.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from service.api.deps import SettingsDep

router = APIRouter(tags=["page"])


@cache
def _template() -> str:
    return files("service").joinpath("static", "index.html").read_text(encoding="utf-8")


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def page(settings: SettingsDep) -> HTMLResponse:
    """The dashboard page, refreshing every ``page_refresh_s`` seconds."""
    refresh_ms = str(round(settings.page_refresh_s * 1000))
    return HTMLResponse(_template().replace("__REFRESH_MS__", refresh_ms))
