"""The hot reads answered before routing: GET /topics, /topics/{id}, /topics/{id}/history,
/perplexity and /stats.

Dashboards poll these few paths; their bodies are already rendered by the view, so the time of
an answer is the framework's. This ASGI layer, outermost in the app, looks the request up in a
table of the current :class:`~service.api.reads.refresher.State` (path and query string to
rendered bytes, built on first use of each query) and sends the bytes, or a 304 for a matching
If-None-Match, observing the same latency histogram as the routes. Its parameters are parsed
by :mod:`service.api.http.query_params`, as the routes parse them. Anything it is not sure of
(an invalid parameter, an error to report, ``?relevance=``, CORS, other methods) goes on to the
app unchanged, which gives the same answers the slow way.

Why two ways to answer /topics, not one: the routes are the API (its OpenAPI schema, FastAPI's
422s, the 404, 409 and 503s, relevance ranked on the thread pool, CORS), and through them an
answer of cached bytes costs ~400 us of CPU against ~6 us here (in process); under 200 polling
dashboards the routes alone took 3.3x the API's CPU and 2.2-2.4x the p99 (docs/api.md, "The
pre-rendered read path"). The layer answers only what it can answer byte for byte as the
routes do: status, body and headers in the same order
(tests/service/api/test_topics_paths.py checks every query form).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qsl

from service.api.http.etags import CACHE_CONTROL, JSON, Rendered, matches
from service.api.http.prometheus import RequestLatency
from service.api.http.query_params import (
    SINCE,
    TOPIC_ID,
    InvalidParameter,
    Kind,
    parse_query,
    topics_query,
)
from service.api.reads import bodies
from service.api.reads.refresher import State, View

TOPICS, ONE_TOPIC, PERPLEXITY, STATS = "/topics", "/topics/{topic_id}", "/perplexity", "/stats"
HISTORY, HISTORY_SUFFIX = "/topics/{topic_id}/history", "/history"
# Distinct queries remembered per state: beyond it, an answer is looked up but not kept.
MEMO_SIZE = 1024

Found = tuple[str, Rendered] | None  # (route template, body), or None: leave it to the app


class FastReads:
    """ASGI middleware serving the cached read bodies of ``view`` without routing."""

    def __init__(self, app: Any, *, view: View, latency: RequestLatency, topic_words: int) -> None:
        self.app = app
        self.view = view
        self.most = topic_words
        self._all_topics = topics_query(topic_words, one=False)
        self._one_topic = topics_query(topic_words, one=True)
        self.latency = latency
        self._observe: dict[str, Callable[[float], None]] = {}  # a series once it has a request
        self._state: State | None = None
        self._memo: dict[tuple[str, bytes], Found] = {}

    def _query(self, raw: bytes, spec: Mapping[str, Kind]) -> dict[str, Any] | None:
        """The query parsed as the routes parse it, when it names only ``spec``'s parameters
        (else None: the app answers, a 422 for an invalid one)."""
        if not raw:
            return {}
        if any(name not in spec for name, _ in parse_qsl(raw.decode("latin-1"), True)):
            return None
        try:
            return parse_query(raw, spec)
        except InvalidParameter:
            return None

    def _topics(self, state: State, path: str, raw: bytes) -> Found:
        topics = state.topics
        if topics is None or state.error is not None:
            return None
        if path.endswith(HISTORY_SUFFIX):
            return self._history(state, path[: -len(HISTORY_SUFFIX)], raw)
        one = path != TOPICS
        params = self._query(raw, self._one_topic if one else self._all_topics)
        if params is None or "relevance" in params:  # ranked from the model: the routes'
            return None
        top = params.get("top", min(bodies.ONE_TOPIC_TOP if one else bodies.TOPICS_TOP, self.most))
        estimate = params.get("estimate", "mean")
        uncertainty = params.get("uncertainty", False)
        if not one:
            sort = params.get("sort", "id")
            return TOPICS, topics.all(top, estimate, uncertainty, sort, None)
        topic_id = self._topic_id(state, path)
        if topic_id is None:
            return None
        k = topics.snapshot.position(topic_id)
        assert k is not None
        return ONE_TOPIC, topics.one(k, top, estimate, uncertainty, None)

    def _topic_id(self, state: State, path: str) -> int | None:
        """The number of ``/topics/{id}`` when it names a live topic of the snapshot (else
        None: a gone or unknown number's 410 or 404 is the routes')."""
        assert state.topics is not None
        try:
            topic_id = TOPIC_ID["topic_id"].parse("path", "topic_id", path[len(TOPICS) + 1 :])
        except InvalidParameter:
            return None
        return topic_id if state.topics.snapshot.position(topic_id) is not None else None

    def _history(self, state: State, path: str, raw: bytes) -> Found:
        if raw or state.history is None:
            return None
        topic_id = self._topic_id(state, path)
        return None if topic_id is None else (HISTORY, state.history(topic_id))

    def _lookup(self, state: State, path: str, raw: bytes) -> Found:
        if path == STATS:
            ok = state.error is None and state.stats is not None and raw == b""
            return (STATS, state.stats) if ok and state.stats is not None else None
        if path == PERPLEXITY:
            params = self._query(raw, SINCE)
            if params is None or state.error is not None or state.perplexity is None:
                return None
            return PERPLEXITY, state.perplexity.since(params.get("since"))
        if path == TOPICS or path.startswith(TOPICS + "/"):
            return self._topics(state, path, raw)
        return None

    def _find(self, path: str, raw: bytes) -> Found:
        state = self.view.state
        if state is not self._state:
            self._state, self._memo = state, {}
        key = (path, raw)
        try:
            return self._memo[key]
        except KeyError:
            found = self._lookup(state, path, raw)
            if len(self._memo) < MEMO_SIZE:
                self._memo[key] = found
            return found

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        found = self._find(scope["path"], scope["query_string"])
        if_none_match: list[str] = []  # every such header: one list (RFC 9110, 5.3)
        if found is not None:
            for name, value in scope["headers"]:
                if name == b"origin":  # CORS headers are the app's to add
                    found = None
                    break
                if name == b"if-none-match":
                    if_none_match.append(value.decode("latin-1"))
        if found is None:
            await self.app(scope, receive, send)
            return
        template, rendered = found
        # The headers of the routes' respond(), in Starlette's order: the same bytes on the wire.
        headers = [(b"etag", rendered.etag.encode()), (b"cache-control", CACHE_CONTROL.encode())]
        if matches(", ".join(if_none_match), rendered.etag):
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
        else:
            headers.append((b"content-length", str(len(rendered.body)).encode()))
            headers.append((b"content-type", JSON.encode()))
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": rendered.body})
        elapsed = time.perf_counter() - started
        observe = self._observe.get(template)
        if observe is None:
            observe = self._observe[template] = self.latency.histogram.labels(
                template, "GET"
            ).observe
        observe(elapsed)
