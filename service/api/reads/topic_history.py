"""Each topic's history (``GET /topics/{id}/history``), parsed once per change of the set.

The history holds one point per evaluation with every topic in it, so the whole set grows
with K. The view's refresher reads its signature (two small commands) every refresh; when it
changed, the members are read again but only those not seen before are parsed (a new
evaluation adds one). Each topic's body is rendered on its first request and kept as bytes, so
a request reads memory only, like the other topic reads.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import redis

from service.api.http.compact_json import dumps
from service.api.http.etags import Rendered
from service.api.reads.bodies import iso
from service.keys import TOPIC_HISTORY_KEY
from service.store.topic_history import HistoryPoint, topic_history_signature

log = logging.getLogger(__name__)


def parse_point(member: bytes | str) -> HistoryPoint | None:
    """One member of the history, its words interned (they repeat from point to point); None
    for a member this code cannot read (it is skipped, not allowed to stop the view)."""
    try:
        data = json.loads(member)
        data["words"] = [[sys.intern(str(w)) for w in words] for words in data["words"]]
        return HistoryPoint.known(data)
    except (ValueError, TypeError, KeyError):
        log.warning("skipping a topic history point that cannot be read")
        return None


def topic_body(points: list[HistoryPoint], k: int) -> bytes:
    """``TopicHistoryOut`` of topic number ``k``, following its label back through the points
    where the drift matching moved labels (points with fewer topics left out); while topics
    move, its column by number, back to the first point after its birth."""
    rows: list[dict[str, Any]] = []
    at = k
    for point in reversed(points):
        column = point.column(at)
        if column is None:
            break
        row = point.topic(column)
        row["at"] = iso(point.at)
        rows.append(row)
        if point.matched is not None and point.ids is None:
            at = point.matched[column]
    return dumps({"id": k, "points": rows[::-1]})


HistoryBody = Callable[[int], Rendered]  # topic number -> its rendered history


class TopicHistory:
    """The history as last read, parsed incrementally by the view's refresher thread; requests
    read the bodies it hands out and never Redis."""

    def __init__(self, cache_size: int) -> None:
        self.cache_size = cache_size
        self.parsed = 0  # members parsed so far (what the cache saves shows here)
        self._signature: object = None
        self._points: dict[bytes | str, HistoryPoint] = {}
        self._body: HistoryBody = self._bodies([])

    def _bodies(self, points: list[HistoryPoint]) -> HistoryBody:
        @lru_cache(maxsize=self.cache_size)
        def body(k: int) -> Rendered:
            return Rendered.of(topic_body(points, k))

        return body

    def refresh(self, client: redis.Redis) -> HistoryBody:
        """Each topic's history as of now: two commands while nothing changed, else the
        members read again and the new ones parsed (one refresher thread calls it)."""
        signature = topic_history_signature(client)
        if signature != self._signature:
            members: list[Any] = client.zrange(TOPIC_HISTORY_KEY, 0, -1)
            known, self._points = self._points, {}
            for member in members:
                point = known.get(member)
                if point is None:
                    point = parse_point(member)
                    self.parsed += 1
                if point is not None:
                    self._points[member] = point
            self._body = self._bodies(list(self._points.values()))
            self._signature = signature
        return self._body
