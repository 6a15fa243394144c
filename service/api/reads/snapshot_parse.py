"""A new snapshot parsed on the refresher's thread in slices that leave the event loop the GIL.

``json.loads`` of a snapshot holds the GIL for the whole text, and building its word objects longer
still, both growing with K: every request arriving meanwhile waited, which made the polled reads'
p99 (BENCHMARKS.md, "API under load"). Here the long lists (each topic's words, their intervals)
are decoded an element at a time and the objects built a topic at a time, and whenever a slice of
work has run for ``SLICE_S`` the thread sleeps ``PAUSE_S`` (the GIL is free then): a request waits
at most about a slice. The result equals ``Snapshot.from_json``'s (a test holds them together);
text in any other form is parsed by it.
"""

from __future__ import annotations

import json
import time
from typing import Any

from service.store import compat
from service.store.snapshot import Snapshot, WordWeight

SLICE_S = 0.0005
PAUSE_S = 0.0001
# The snapshot's fields that grow with K: decoded an element (a topic) at a time.
_LONG = frozenset({"topics", "sample_topics", "intervals", "topic_coherence", "topic_drift"})
_DECODER = json.JSONDecoder()
_SPACE = json.decoder.WHITESPACE.match  # type: ignore[attr-defined]


class Pacer:
    """Called between slices of work: sleeps ``PAUSE_S`` once ``SLICE_S`` has run since the
    last pause, so that another thread waiting for the GIL gets it."""

    def __init__(self) -> None:
        self.pauses = 0
        self._since = time.perf_counter()

    def __call__(self) -> None:
        if time.perf_counter() - self._since >= SLICE_S:
            time.sleep(PAUSE_S)
            self.pauses += 1
            self._since = time.perf_counter()


def _skip(text: str, at: int) -> int:
    return int(_SPACE(text, at).end())


def _list(text: str, at: int, pace: Pacer) -> tuple[list[Any], int]:
    """The JSON array starting at ``text[at]`` ('['), an element at a time."""
    items: list[Any] = []
    at = _skip(text, at + 1)
    if text[at] == "]":
        return items, at + 1
    while True:
        item, at = _DECODER.raw_decode(text, at)
        items.append(item)
        pace()
        at = _skip(text, at)
        if text[at] == "]":
            return items, at + 1
        if text[at] != ",":
            raise ValueError(f"expected ',' or ']' at {at}")
        at = _skip(text, at + 1)


def _object(text: str, pace: Pacer) -> dict[str, Any]:
    """The top-level JSON object of ``text``, its long arrays an element at a time."""
    data: dict[str, Any] = {}
    at = _skip(text, 0)
    if text[at] != "{":
        raise ValueError("not a JSON object")
    at = _skip(text, at + 1)
    if text[at] == "}":
        return data
    while True:
        key, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        if not isinstance(key, str) or text[at] != ":":
            raise ValueError(f"expected a key and ':' at {at}")
        at = _skip(text, at + 1)
        if key in _LONG and text[at] == "[":
            data[key], at = _list(text, at, pace)
        else:
            data[key], at = _DECODER.raw_decode(text, at)
        pace()
        at = _skip(text, at)
        if text[at] == "}":
            break
        if text[at] != ",":
            raise ValueError(f"expected ',' or '}}' at {at}")
        at = _skip(text, at + 1)
    if _skip(text, at + 1) != len(text):
        raise ValueError("text after the object")
    return data


def parse_snapshot(raw: bytes, pace: Pacer | None = None) -> Snapshot:
    """``Snapshot.from_json(raw)``, in slices (see the module's docstring)."""
    pace = Pacer() if pace is None else pace
    text = raw.decode("utf-8")
    try:
        data = _object(text, pace)
    except (ValueError, IndexError):
        return Snapshot.from_json(raw)  # its error, or its answer for an unusual form
    compat.sample_as_mean(data)
    for name in ("topics", "sample_topics"):
        if not isinstance(data[name], list):
            return Snapshot.from_json(raw)
        words = []
        for topic in data[name]:
            words.append([WordWeight(str(w), float(p)) for w, p in topic])
            pace()
        data[name] = words
    return Snapshot.known(data)
