"""One article behind a topic as the snapshot carries it (a row of ``topic_articles``), and
its link: the live source's articles link to Wikipedia by page id, a file source's have none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

WIKIPEDIA_SOURCE = "wikipedia"
WIKIPEDIA_PAGE_URL = "https://en.wikipedia.org/?curid={id}"


@dataclass(frozen=True)
class TopicArticle:
    """One article behind a topic: its title, id (the page id for Wikipedia), source, its
    share of the topic in the Gibbs expectations it was learned with, and the documents seen
    when it was learned."""

    title: str
    id: str
    source: str
    share: float
    docs_seen: int
    # How sure the share is given the article's length (lda.search.share_bound), and the
    # length in vocabulary tokens (None from a worker before they were kept).
    share_bound: float | None = None
    tokens: int | None = None

    @property
    def url(self) -> str | None:
        """The article on Wikipedia for the live source; None for a file source."""
        if self.source != WIKIPEDIA_SOURCE or not self.id.isdigit():
            return None
        return WIKIPEDIA_PAGE_URL.format(id=self.id)

    def row(self) -> list[Any]:
        """The snapshot's row of it: [title, id, source, share, docs seen]."""
        return [self.title, self.id, self.source, self.share, self.docs_seen]

    def sure(self) -> list[float]:
        """The snapshot's [share_bound, tokens] of it, beside its row."""
        return [float(self.share_bound or 0.0), float(self.tokens or 0)]

    @classmethod
    def from_row(cls, row: Sequence[Any], sure: Sequence[Any] | None = None) -> TopicArticle:
        title, article_id, source, share, docs_seen = row
        bound, tokens = (None, None) if sure is None else (float(sure[0]), int(sure[1]))
        return cls(
            str(title), str(article_id), str(source), float(share), int(docs_seen), bound, tokens
        )


def article_url(source: str, article_id: str) -> str | None:
    """An article's link (None for a file source)."""
    return TopicArticle("", article_id, source, 0.0, 0).url
