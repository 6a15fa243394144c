"""The search answers kept rendered: each topic's and each article's first ``most`` articles
(the setting search_limit_max) once per model version, as JSON fragments that any ``limit`` and
``offset`` within them slice, in a least-recently-used cache bounded in bytes.

Keyed by what is asked about (a topic, an article), never by ``limit`` or ``offset``, so a sweep
of distinct pages cannot fill it: a topic is kept once, whatever the pages read of it, and a page
past the first ``most`` articles is rendered each time (a slice of the index) and not kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import orjson

from service.api.http.etags import Rendered

CACHE_BYTES = 16 * 2**20  # rendered articles kept per API process (docs/defaults.md)
_OVERHEAD = 64  # bytes a kept fragment costs beyond its own (object header, list slot)


@dataclass(frozen=True)
class Kept:
    """An answer's articles, each rendered as JSON, and how many there are in all (a topic's
    kept articles; an article's neighbours are all in ``articles``)."""

    articles: tuple[bytes, ...]
    total: int
    size: int = field(init=False)

    def __post_init__(self) -> None:
        size = sum(len(a) + _OVERHEAD for a in self.articles) + _OVERHEAD
        object.__setattr__(self, "size", size)


def rendered_answer(head: dict[str, object], articles: Sequence[bytes]) -> Rendered:
    """The answer ``head`` with ``"articles"``, the rendered ``articles`` in order, last."""
    opened = orjson.dumps(head)[:-1]
    comma = b"," if len(opened) > 1 else b""
    return Rendered.of(opened + comma + b'"articles":[' + b",".join(articles) + b"]}")


class KeptAnswers:
    """What :class:`Kept` each key has, for one model version at a time, the least recently
    used dropped once their bytes pass ``max_bytes``. Used from the event loop only."""

    def __init__(self, max_bytes: int = CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.version = ""
        self.bytes = 0
        self.kept: OrderedDict[Hashable, Kept] = OrderedDict()

    def get(self, version: str, key: Hashable) -> Kept | None:
        """The answer kept for ``key`` under ``version`` (now the most recently used), or None;
        a new version drops every older answer."""
        if version != self.version:
            self.version, self.kept, self.bytes = version, OrderedDict(), 0
        kept = self.kept.get(key)
        if kept is not None:
            self.kept.move_to_end(key)
        return kept

    def put(self, version: str, key: Hashable, kept: Kept) -> Kept:
        """Keep ``kept`` if ``version`` is still the one kept (a newer model may have come while
        it was made) and it fits; the least recently used go to make room."""
        if version != self.version or kept.size > self.max_bytes:
            return kept
        old = self.kept.pop(key, None)
        if old is not None:
            self.bytes -= old.size
        self.kept[key] = kept
        self.bytes += kept.size
        while self.bytes > self.max_bytes:
            _, dropped = self.kept.popitem(last=False)
            self.bytes -= dropped.size
        return kept
