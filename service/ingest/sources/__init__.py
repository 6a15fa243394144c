"""Where articles come from: one small interface shared by training, the scraper and replays.

A source is an iterable of :class:`Article` (plain text, already cleaned of wikitext).
``open_source("jsonl:PATH")``, ``open_source("dump:PATH")`` and ``open_source("wikipedia")``
name them on the command line.
"""

from __future__ import annotations

import threading
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


def open_source(spec: str, **options: object) -> Source:
    """Open the source named by ``spec``: ``jsonl:PATH``, ``dump:PATH`` or ``wikipedia``.

    Option ``settings`` (a :class:`service.settings.Settings`) configures the live source
    (API URL, contact, rate, timeouts, retries); without it the environment's settings apply.
    Option ``stop`` (a :class:`threading.Event`) cuts the live source's waits short.
    """
    kind, _, arg = spec.partition(":")
    if kind == "jsonl" and arg:
        from service.ingest.sources.jsonl import JsonlSource

        return JsonlSource(arg)
    if kind == "dump" and arg:
        from service.ingest.sources.dump import DumpSource

        return DumpSource(arg)
    if kind == "wikipedia" and not arg:
        from service.ingest.sources.wikipedia import WikipediaSource
        from service.settings import Settings

        settings = options.get("settings")
        if not isinstance(settings, Settings):
            settings = Settings.model_validate({})  # from the environment
        stop = options.get("stop")
        return WikipediaSource(settings, stop=stop if isinstance(stop, threading.Event) else None)
    raise SourceError(f"unknown source {spec!r}: expected jsonl:PATH, dump:PATH or wikipedia")
