"""The interface every source implements: :class:`Article`, :class:`Source`, the skip counts and
the errors (apart from :func:`~service.ingest.sources.open_source`, so the sources themselves
can import it without importing the package that opens them).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from service.settings_pipeline import MAX_ARTICLE_BYTES
from service.store.article_limits import ARTICLE_ID_CHARS, TITLE_CHARS

log = logging.getLogger(__name__)

# Wikitext to plain text; raises ArticleSkipped for a page it cannot or will not clean.
Clean = Callable[[str], str]
# Bytes of an encoded record beyond its text's: JSON's quotes, its other fields and structure.
ENCODING_SLACK = 64 * 1024


def encoded_bound(max_article_bytes: int) -> int:
    """The most bytes of JSON read for records whose text is at most ``max_article_bytes``:
    twice it (JSON's escapes can double a text), plus the slack (a jsonl line, an API answer)."""
    return 2 * max_article_bytes + ENCODING_SLACK


@dataclass(frozen=True)
class Position:
    """How far into a file source: the decompressed byte offset just past what was read, the
    lines or pages before it, and where a reader restarts to reach it (the compressed offset of
    the gzip member or bzip2 stream holding it, and that member's decompressed start)."""

    offset: int = 0
    count: int = 0
    member_at: int = 0
    member_offset: int = 0


@dataclass(frozen=True)
class Article:
    """One article: a stable id (the page id when known), its title, plain text and origin;
    from a file, also the position just past it (where a restarted scraper carries on)."""

    id: str
    title: str
    text: str
    source: str
    after: Position | None = field(default=None, compare=False, repr=False)


class SourceError(Exception):
    """A source cannot be opened or read (bad spec, missing or unreadable file)."""


class ArticleSkipped(Exception):
    """One article cannot be used: counted under ``reason``, and the source goes on."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def too_large(text: str, most: int) -> bool:
    """Whether ``text`` is longer than ``most`` bytes in UTF-8 (encoded only when in doubt)."""
    if len(text) > most:
        return True
    return 4 * len(text) > most and len(text.encode("utf-8", "surrogatepass")) > most


class SourceStopped(Exception):
    """The source was asked to stop while it waited (backoff, Retry-After, rate limit)."""


def require_file(path: Path) -> None:
    """Raise a SourceError naming what ``path`` is when it is not a readable file."""
    if path.is_dir():
        raise SourceError(f"cannot read {path}: it is a directory, not a file")
    if not path.is_file():
        raise SourceError(f"cannot read {path}: no such file")


def cut_title(title: str) -> str:
    """``title`` within TITLE_CHARS characters: a longer one cut, an ellipsis last."""
    if len(title) <= TITLE_CHARS:
        return title
    return title[: TITLE_CHARS - 1].rstrip() + "\u2026"


@dataclass
class SkipCounter:
    """Counts of articles skipped, by reason (never fatal: skipped input is counted), and of
    fields cut to their bound in articles kept (``truncated``, by field)."""

    counts: Counter[str] = field(default_factory=Counter)
    truncated: Counter[str] = field(default_factory=Counter)

    def skip(self, reason: str, where: str | None = None, detail: str = "") -> None:
        """Count one skipped article; one that is damaged (``where`` it is given) is also
        logged, once, since its source may hold more of the same."""
        self.counts[reason] += 1
        if where is not None:
            log.warning("skipped %s (%s)%s", where, reason, f": {detail}" if detail else "")

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def capped(self, article_id: str, title: str, where: str) -> tuple[str, str]:
        """The id and title an article carries: an id over ARTICLE_ID_CHARS raises
        ArticleSkipped (``id_too_long``), a title over TITLE_CHARS is cut and counted."""
        if len(article_id) > ARTICLE_ID_CHARS:
            raise ArticleSkipped(
                "id_too_long", f"an id of {len(article_id)} characters, over {ARTICLE_ID_CHARS}"
            )
        kept = cut_title(title)
        if kept is not title:
            self.truncated["title"] += 1
            log.warning("%s: title of %d characters cut to %d", where, len(title), TITLE_CHARS)
        return article_id, kept


class FileSource:
    """What the file sources share: the file, skip counts, and a position to start from."""

    kind = "file"

    def __init__(
        self,
        path: str | Path,
        *,
        max_article_bytes: int = MAX_ARTICLE_BYTES,
        clean: Clean | None = None,
    ) -> None:
        """``clean`` replaces the in-process cleaning of wikitext (the scraper's is bounded in
        time and memory); ``max_article_bytes`` is the longest article kept."""
        self.path = Path(path)
        self.name = f"{self.kind}:{self.path}"
        self.skipped = SkipCounter()
        self.start = Position()
        self.max_article_bytes = max_article_bytes
        self.clean: Clean | None = clean  # None: :func:`~service.ingest.cleaning.clean_or_skip`
        require_file(self.path)

    def identity(self) -> str:
        """The file as a position belongs to it: kind, resolved path, size and modification
        time, so a replaced, changed or different file never inherits another's position."""
        stat = self.path.stat()
        return f"{self.kind}:{self.path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"

    def resume_from(self, position: Position) -> None:
        """Start the next iteration at ``position`` (one this source's articles carried)."""
        self.start = position


class Source(Protocol):
    """An iterable of articles with counters of what it skipped."""

    name: str
    skipped: SkipCounter

    def __iter__(self) -> Iterator[Article]: ...
