"""The API's in-memory view of Redis, kept current by one background thread.

Requests read :attr:`View.state` (replaced whole, never half an update) and touch neither Redis
nor a thread pool. Every ``api_refresh_s`` the refresher reads a few small keys (the snapshot's
version token, the perplexity signature, the live values of
:mod:`service.api.reads.pipeline_status`) and reads and parses the snapshot or the perplexity
history only when they changed. The JSON of a snapshot is rendered on first request, once per
distinct query (``top``, topic id, ``estimate``), into a bounded LRU cache.

Topic names are read whole (one HGETALL) on every refresh rather than tracked by a version:
operators name a handful of topics and the worker rewrites the hash when it moves names with
their topics, so a version key would have to be kept by both writers for a saving of a few
hundred bytes a refresh. A change of names makes a new :class:`TopicsView` over the same parsed
snapshot, so bodies never show old names.
"""

from __future__ import annotations

import logging
import threading
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import redis
from fastapi import HTTPException, status

from lda.config import Estimate
from lda.relevance import SUGGESTED_JOIN, SUGGESTED_WORDS
from lda.topic_ids import TopicIds
from service.api.http.errors import redis_failure, redis_failure_log
from service.api.http.etags import Rendered
from service.api.http.prometheus import render as render_metrics
from service.api.reads import bodies, pipeline_status
from service.api.reads.relevance import Ranking
from service.api.reads.snapshot_parse import parse_snapshot
from service.api.reads.topic_history import HistoryBody, TopicHistory
from service.api.reads.topic_numbers import Events, events, move_metrics, place
from service.store.perplexity import PerplexityPoint, perplexity_signature, read_perplexity
from service.store.snapshot import Snapshot, read_raw_snapshot, read_snapshot_version
from service.store.topic_moves import read_topic_moves, read_topic_moves_version
from service.store.topic_names import read_topic_names

log = logging.getLogger(__name__)

NO_SNAPSHOT = "no topics yet: the worker has not published its first snapshot"
STARTING = "the API has not read Redis yet"


def suggested_names(snapshot: Snapshot) -> list[str]:
    """Each topic's suggested name: the worker's, from its first words by relevance, or from
    its most probable words in a snapshot of an older worker."""
    if snapshot.topic_suggested is not None and len(snapshot.topic_suggested) == snapshot.n_topics:
        return snapshot.topic_suggested
    return [SUGGESTED_JOIN.join(w.word for w in t[:SUGGESTED_WORDS]) for t in snapshot.topics]


AllTopics = Callable[[int, Estimate, bool, bodies.TopicOrder, Ranking | None], Rendered]
OneTopic = Callable[[int, int, Estimate, bool, Ranking | None], Rendered]


class TopicsView:
    """One snapshot version with its topics' labels (and, while topics move, the record of
    their numbers: ``numbers``), and its bodies, each rendered on its first request (by
    probability, or by a relevance ranking of the published model)."""

    def __init__(
        self,
        version: str,
        snapshot: Snapshot,
        cache_size: int,
        labels: bodies.Labels | None = None,
        numbers: tuple[str, TopicIds] | None = None,
    ) -> None:
        self.version = version
        self.snapshot = snapshot
        self.labels = labels = labels or bodies.Labels({}, suggested_names(snapshot))
        self.numbers_version = None if numbers is None else numbers[0]
        self.numbers = None if numbers is None else numbers[1]
        self.events: Events = events(self.numbers, cache_size)

        # Closures over the snapshot, not bound methods: a cache holding ``self`` would make a
        # cycle, and every replaced view (tens of thousands of objects) would wait for a full
        # garbage collection, which stalled every request while it ran.
        def all_topics(
            top: int,
            estimate: Estimate,
            uncertainty: bool,
            sort: bodies.TopicOrder,
            ranking: Ranking | None,
        ) -> Rendered:
            return Rendered.of(
                bodies.topics(snapshot, labels, top, estimate, uncertainty, sort, ranking)
            )

        def one_topic(
            topic_id: int,
            top: int,
            estimate: Estimate,
            uncertainty: bool,
            ranking: Ranking | None,
        ) -> Rendered:
            return Rendered.of(
                bodies.one_topic(snapshot, labels, topic_id, top, estimate, uncertainty, ranking)
            )

        self.all: AllTopics = lru_cache(maxsize=cache_size)(all_topics)
        self.one: OneTopic = lru_cache(maxsize=cache_size)(one_topic)

    def place(self, number: int) -> int:
        """Where live topic ``number`` is listed; else its 410 (gone) or 404 raised."""
        return place(self.snapshot, self.numbers, number)


class PerplexityView:
    """The perplexity history, each point rendered once; a ``since`` body joins the tail."""

    def __init__(self, signature: object, points: list[PerplexityPoint], cache_size: int) -> None:
        self.signature = signature
        self.latest = points[-1] if points else None
        scores = [p.docs_seen for p in points]
        rendered = [bodies.point(p) for p in points]

        def since(after: int | None) -> Rendered:  # a closure, not a method: see TopicsView
            start = 0 if after is None else bisect_right(scores, after)
            latest = rendered[-1] if rendered else None
            return Rendered.of(bodies.perplexity(latest, rendered[start:]))

        self.since: Callable[[int | None], Rendered] = lru_cache(maxsize=cache_size)(since)


@dataclass(frozen=True)
class State:
    """What the API serves now. ``error`` says why Redis could not be read (then only
    ``/metrics`` and ``/healthz`` answer 200)."""

    error: str | None
    error_detail: str | None = None  # where and why, for the operator (admin token, logs)
    topics: TopicsView | None = None
    perplexity: PerplexityView | None = None
    stats: Rendered | None = None
    metrics: bytes = render_metrics([pipeline_status.redis_up(False)]).encode()
    model: tuple[str, int] | None = None
    history: HistoryBody | None = None  # topic id -> its history's body

    def not_ready(self) -> str | None:
        """Why ``/topics`` would not answer 200 (None when it would)."""
        return self.error or (NO_SNAPSHOT if self.topics is None else None)

    def _unavailable(self, reason: str) -> HTTPException:
        return HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, reason)

    def require_topics(self) -> TopicsView:
        """The snapshot being served, or 503 saying why there is none."""
        if self.error is not None or self.topics is None:
            raise self._unavailable(self.error or NO_SNAPSHOT)
        return self.topics

    def require_perplexity(self) -> PerplexityView:
        """The perplexity history, or 503 when Redis could not be read."""
        if self.error is not None or self.perplexity is None:
            raise self._unavailable(self.error or STARTING)
        return self.perplexity

    def require_stats(self) -> Rendered:
        """The ``/stats`` body of the last refresh, or 503 when Redis could not be read."""
        if self.error is not None or self.stats is None:
            raise self._unavailable(self.error or STARTING)
        return self.stats


@dataclass(frozen=True)
class ViewConfig:
    """What the view needs of the settings: api_refresh_s, render_cache, topic_words, the Redis
    URL (named, redacted, in errors) and where the live values are."""

    refresh_s: float
    render_cache: int
    topic_words: int
    redis_url: str | None
    sources: pipeline_status.StreamKeys
    silent_after_s: float  # a worker whose heartbeat is older is not responding


class View:
    """Holds :class:`State` and the thread that refreshes it every ``config.refresh_s``."""

    def __init__(self, client: redis.Redis, config: ViewConfig) -> None:
        self.client = client
        self.config = config
        self.state = State(error=STARTING)
        self.history = TopicHistory(config.render_cache)
        self._topics: TopicsView | None = None
        self._snapshot: tuple[str, Snapshot] | None = None
        self._numbers: tuple[str, TopicIds] | None = None
        self._perplexity: PerplexityView | None = None
        self._cycles = threading.Condition()
        self._started = self._finished = 0
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- reading Redis -------------------------------------------------------------------

    def _read_snapshot(self) -> tuple[str, Snapshot] | None:
        version = read_snapshot_version(self.client)
        if version is not None and self._snapshot is not None and self._snapshot[0] == version:
            return self._snapshot
        read = read_raw_snapshot(self.client)
        if read is None:
            self._snapshot = None
        elif self._snapshot is None or self._snapshot[0] != read[0]:
            # Parsed in slices, before the state that holds it is published whole: requests
            # meanwhile are served the previous one.
            self._snapshot = read[0], parse_snapshot(read[1])
        return self._snapshot

    def _read_topics(self) -> TopicsView | None:
        read = self._read_snapshot()
        if read is None:
            self._topics = None
            return None
        version, snapshot = read
        labels = bodies.Labels(read_topic_names(self.client), suggested_names(snapshot))
        numbers = None if snapshot.fixed else self._read_numbers()
        numbered = None if numbers is None else numbers[0]
        topics = self._topics
        if (
            topics is None
            or topics.version != version
            or topics.labels != labels
            or topics.numbers_version != numbered
        ):
            # Its default body rendered here, off the event loop.
            topics = TopicsView(version, snapshot, self.config.render_cache, labels, numbers)
            topics.all(min(bodies.TOPICS_TOP, self.config.topic_words), "mean", False, "id", None)
            self._topics = topics
        return topics

    def _read_numbers(self) -> tuple[str, TopicIds] | None:
        """The topic numbers' record (while topics move), read again only when its version
        changed."""
        version = read_topic_moves_version(self.client)
        if version is None:
            self._numbers = None
        elif self._numbers is None or self._numbers[0] != version:
            self._numbers = read_topic_moves(self.client)
        return self._numbers

    def _read_perplexity(self) -> PerplexityView:
        signature = perplexity_signature(self.client)
        if self._perplexity is None or self._perplexity.signature != signature:
            points = read_perplexity(self.client)
            perplexity = PerplexityView(signature, points, self.config.render_cache)
            perplexity.since(None)  # the default body, rendered off the event loop
            self._perplexity = perplexity
        return self._perplexity

    def _read(self) -> State:
        now = pipeline_status.read_live_values(self.client, self.config.sources, time.time())
        topics = self._read_topics()
        perplexity = self._read_perplexity()
        history = self.history.refresh(self.client)
        snapshot = None if topics is None else topics.snapshot
        silent = pipeline_status.silent_since(snapshot, now, self.config.silent_after_s)
        stats = pipeline_status.stats(snapshot, now, self.config.sources, silent)
        families = pipeline_status.metrics(snapshot, perplexity.latest, now, silent)
        families += move_metrics(None if topics is None else topics.numbers)
        return State(
            error=None,
            topics=topics,
            perplexity=perplexity,
            stats=Rendered.of(stats.model_dump_json().encode()),
            metrics=render_metrics(families).encode(),
            model=now.model,
            history=history,
        )

    def refresh(self) -> None:
        """One refresh: read what changed and publish the new state (or the failure)."""
        with self._cycles:
            self._started += 1
        try:
            self.state = self._read()
        except redis.RedisError as exc:
            if self.state.error in (None, STARTING):  # once per outage, not per refresh
                log.warning(
                    "cannot read the snapshot: %s", redis_failure_log(self.config.redis_url, exc)
                )
            self.state = State(
                error=redis_failure(self.config.redis_url, exc),
                error_detail=redis_failure_log(self.config.redis_url, exc),
            )
        except Exception:  # a malformed key: keep serving the last good state, say so in logs
            log.exception("could not refresh the API's view of Redis")
        finally:
            with self._cycles:
                self._finished += 1
                self._cycles.notify_all()

    # --- the refresher thread -------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.config.refresh_s)
            self._wake.clear()
            if not self._stop.is_set():
                self.refresh()

    def start(self) -> None:
        """Start refreshing in the background (call :meth:`refresh` once first)."""
        self._thread = threading.Thread(target=self._run, name="api-view", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the refresher and wait for its current cycle."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    def wait_fresh(self, timeout: float) -> bool:
        """Refresh now and wait for a cycle that began after this call (so it saw every write
        made before it); False if none finished within ``timeout`` seconds."""
        with self._cycles:
            target = self._started + 1
        self._wake.set()
        with self._cycles:
            return self._cycles.wait_for(lambda: self._finished >= target, timeout)
