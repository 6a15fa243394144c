"""``GET /``: a page for people watching the stream.

The pipeline's health (scrapers, queue, worker, checkpoints, with relative times), perplexity
and topic quality (coherence, diversity) against documents seen, the topics with their names,
sizes, coherence and drift (sorted by any), and one topic's view: its name, size, words by
relevance with weight bars and uncertainty intervals, the articles behind it and its history
(deep link ``/#topic=2&sort=size&lambda=0.8``). It polls ``/stats``, ``/perplexity?since=``,
``/topics``, ``/topics/{id}`` and ``/topics/{id}/history`` every ``page_refresh_s`` seconds,
revalidating with ETags.

Self-contained HTML, CSS and JS (``service/static/index.html``); nothing is loaded from the
internet. It is served under a Content-Security-Policy that allows its own inline script and
style by their hashes, fetches to this origin and nothing else (no framing either), so even
text an answer smuggled into the page could run nothing; its article links go only to the live
source's wiki.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from functools import cache
from importlib.resources import files
from urllib.parse import urlsplit

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from lda.config import CHANGED_BITS
from service.store.topic_article import WIKIPEDIA_PAGE_URL

INLINE = re.compile(r"<(script|style)>(.*?)</\1>", re.S)


@cache
def _template() -> str:
    page = files("service").joinpath("static", "index.html").read_text(encoding="utf-8")
    return page.replace("__CHANGED_BITS__", repr(CHANGED_BITS))


def wiki_host() -> str:
    """The host of the live source's article links, the only one the page links to (over
    https, as the server builds them)."""
    return urlsplit(WIKIPEDIA_PAGE_URL).netloc


def content_security_policy(page: str) -> str:
    """The page's policy: its inline ``<script>`` and ``<style>`` by their SHA-256 hashes (no
    other script or style, no style attribute), requests to this origin only, no framing."""
    allowed: dict[str, list[str]] = {"script": [], "style": []}
    for kind, text in INLINE.findall(page):
        digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
        allowed[kind].append(f"'sha256-{digest}'")
    return "; ".join(
        [
            "default-src 'none'",
            "script-src " + (" ".join(allowed["script"]) or "'none'"),
            "style-src " + (" ".join(allowed["style"]) or "'none'"),
            "connect-src 'self'",
            "img-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )


def router(refresh_s: float) -> APIRouter:
    """The page's route: the dashboard, refreshing every ``refresh_s`` seconds (the setting
    page_refresh_s)."""
    routes = APIRouter(tags=["page"])
    refresh_ms = str(round(refresh_s * 1000))
    html = _template().replace("__REFRESH_MS__", refresh_ms)
    html = html.replace("__WIKI_HOST__", json.dumps(wiki_host()))
    headers = {
        "Content-Security-Policy": content_security_policy(html),
        "X-Content-Type-Options": "nosniff",
        "X-Frame-Options": "DENY",  # frame-ancestors for browsers before it
        "Referrer-Policy": "no-referrer",
    }

    @routes.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page() -> HTMLResponse:
        """The dashboard page."""
        return HTMLResponse(html, headers=headers)

    return routes
