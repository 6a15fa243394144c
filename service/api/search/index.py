"""The kept articles as the API searches them, built once per published model version from the
rows the worker published with it (:mod:`service.store.search`).

Built on load: one row per article id (a redelivered article kept twice keeps its newest
shares), each topic's rows ordered by how sure the model is that they are about it
(:func:`lda.search.share_bound`), and each row's mass on the topics it does not keep. A search
is then a slice (a topic's articles) or one exact pass over every row (the Hellinger distance,
:func:`lda.search.hellinger`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lda.search import SparseRows, hellinger, nearest, share_bound
from service.store.search import IndexRows
from service.store.topic_article import article_url

TOPICS_SHOWN = 3  # each found article's largest shares, in an answer


@dataclass(frozen=True)
class Found:
    """One article in an answer: its row, and its distance or its share and bound."""

    row: int
    distance: float | None = None
    share: float | None = None
    bound: float | None = None


class SearchIndex:
    """Every kept article once, searchable by topic and by likeness of proportions."""

    def __init__(self, rows: IndexRows, numbers: Sequence[int] | None = None) -> None:
        """``numbers``: each topic's number (none given: topic k is number k)."""
        self.numbers = list(range(rows.n_topics) if numbers is None else numbers)
        self.rows = _newest_per_id(rows)
        rows = self.rows
        self.n_topics = rows.n_topics
        self.sparse = SparseRows(rows.topics, rows.shares, rows.n_topics)
        self.rest = self.sparse.rest
        self.by_id = {ref[1]: i for i, ref in enumerate(rows.refs)}
        n, keep = rows.topics.shape
        flat = rows.topics.ravel()
        valid = flat >= 0
        row = np.repeat(np.arange(n), keep)[valid]
        topic = flat[valid].astype(np.int64)
        share = rows.shares.ravel()[valid].astype(np.float64)
        bound = share_bound(share, rows.tokens[row].astype(np.float64), rows.n_topics)
        order = np.lexsort((row, -bound, topic))  # by topic, surest first, ties by row
        self.topic_rows, self.topic_share = row[order], share[order]
        self.topic_bound = bound[order]
        self.topic_start = np.searchsorted(topic[order], np.arange(rows.n_topics + 1))

    def __len__(self) -> int:
        return len(self.rows.refs)

    def listed(self, topic: int) -> int:
        """How many kept articles have ``topic`` among their largest shares."""
        return int(self.topic_start[topic + 1] - self.topic_start[topic])

    def topic(self, topic: int, limit: int, offset: int = 0) -> list[Found]:
        """The articles most surely about ``topic``, from the ``offset``-th."""
        start = int(self.topic_start[topic]) + offset
        end = min(start + limit, int(self.topic_start[topic + 1]))
        return [
            Found(int(r), share=float(s), bound=float(b))
            for r, s, b in zip(
                self.topic_rows[start:end],
                self.topic_share[start:end],
                self.topic_bound[start:end],
                strict=True,
            )
        ]

    def distances(self, query: np.ndarray) -> np.ndarray:
        """(N,) every article's Hellinger distance to the proportions ``query`` (K,)."""
        return hellinger(query, self.sparse, self.rest)

    def nearest(self, distance: np.ndarray, limit: int, skip: int | None = None) -> list[Found]:
        """The ``limit`` articles nearest by ``distance`` (``skip``: a row left out)."""
        if skip is not None:
            distance = distance.copy()
            distance[skip] = np.inf
            limit = min(limit, len(self) - 1)
        rows = nearest(distance, limit)
        return [Found(int(r), distance=float(distance[r])) for r in rows]

    def neighbours(self, row: int, limit: int) -> list[Found]:
        """The ``limit`` articles nearest row ``row``'s own proportions, itself left out."""
        return self.nearest(self.distances(self.proportions(row)), limit, skip=row)

    def proportions(self, row: int) -> np.ndarray:
        """Row ``row`` as proportions over all K topics (its unkept mass spread evenly)."""
        return self.sparse.dense(row)

    def number(self, topic: int) -> int:
        """Topic ``topic``'s number (itself while K is fixed)."""
        return self.numbers[topic]

    def article(self, found: Found) -> dict[str, Any]:
        """An answer's article: reference, link, length, when its shares were computed, its
        largest shares, and its distance or its share and bound."""
        title, article_id, source = self.rows.refs[found.row]
        topics, shares = self.rows.topics[found.row], self.rows.shares[found.row]
        out: dict[str, Any] = {
            "title": title,
            "id": article_id,
            "source": source,
            "url": article_url(source, article_id),
            "tokens": round(float(self.rows.tokens[found.row])),
            "docs_seen": int(self.rows.at[found.row]),
            "topics": [
                {"id": self.number(int(t)), "share": round(float(s), 4)}
                for t, s in zip(topics[:TOPICS_SHOWN], shares[:TOPICS_SHOWN], strict=True)
                if t >= 0
            ],
        }
        if found.distance is not None:
            out["distance"] = round(found.distance, 6)
        if found.share is not None and found.bound is not None:
            out["share"] = round(found.share, 4)
            out["share_bound"] = round(found.bound, 4)
        return out


def _newest_per_id(rows: IndexRows) -> IndexRows:
    """``rows`` with one row per article id: the one whose shares are newest."""
    ids = [ref[1] for ref in rows.refs]
    if len(set(ids)) == len(ids):
        return rows
    newest: dict[str, int] = {}
    for i, article_id in enumerate(ids):
        j = newest.get(article_id)
        if j is None or rows.at[i] >= rows.at[j]:
            newest[article_id] = i
    keep = np.array(sorted(newest.values()), dtype=np.int64)
    return IndexRows(
        refs=[rows.refs[i] for i in keep.tolist()],
        topics=rows.topics[keep],
        shares=rows.shares[keep],
        tokens=rows.tokens[keep],
        at=rows.at[keep],
        n_topics=rows.n_topics,
    )
