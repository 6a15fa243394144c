"""The interface every source implements: :class:`Article`, :class:`Source`, the skip counts and
the errors (apart from :func:`~service.ingest.sources.open_source`, so the sources themselves
can import it without importing the package that opens them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Article:
    """One article: a stable id (the page id when known), its title, plain text and origin."""

    id: str
    title: str
    text: str
    source: str


class SourceError(Exception):
    """A source cannot be opened or read (bad spec, missing or unreadable file)."""


class SourceStopped(Exception):
    """The source was asked to stop while it waited (backoff, Retry-After, rate limit)."""


def require_file(path: Path) -> None:
    """Raise a SourceError naming what ``path`` is when it is not a readable file."""
    if path.is_dir():
        raise SourceError(f"cannot read {path}: it is a directory, not a file")
    if not path.is_file():
        raise SourceError(f"cannot read {path}: no such file")


@dataclass
class SkipCounter:
    """Counts of articles skipped, by reason (never fatal: skipped input is counted)."""

    counts: Counter[str] = field(default_factory=Counter)

    def skip(self, reason: str) -> None:
        self.counts[reason] += 1

    @property
    def total(self) -> int:
        return sum(self.counts.values())


class Source(Protocol):
    """An iterable of articles with counters of what it skipped."""

    name: str
    skipped: SkipCounter

    def __iter__(self) -> Iterator[Article]: ...
