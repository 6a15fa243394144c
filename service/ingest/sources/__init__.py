"""Where articles come from: one small interface shared by training, the scraper and replays.

A source is an iterable of :class:`Article` (plain text, already cleaned of wikitext).
``open_source("jsonl:PATH")``, ``open_source("dump:PATH")`` and ``open_source("wikipedia")``
name them on the command line.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from service.ingest.sources.base import (
    MAX_ARTICLE_BYTES,
    Article,
    ArticleSkipped,
    Clean,
    FileSource,
    Position,
    SkipCounter,
    Source,
    SourceError,
    SourceStopped,
    require_file,
)

if TYPE_CHECKING:
    from service.ingest.sources.wikipedia import WikipediaConfig

__all__ = [
    "MAX_ARTICLE_BYTES",
    "Article",
    "ArticleSkipped",
    "Clean",
    "FileSource",
    "Position",
    "SkipCounter",
    "Source",
    "SourceError",
    "SourceStopped",
    "file_source",
    "open_source",
    "require_file",
]


def open_source(
    spec: str,
    *,
    wikipedia: WikipediaConfig | None = None,
    stop: threading.Event | None = None,
    replay_rate: float | None = None,
    max_article_bytes: int = MAX_ARTICLE_BYTES,
    clean: Clean | None = None,
) -> Source:
    """Open the source named by ``spec``: ``jsonl:PATH``, ``dump:PATH`` or ``wikipedia``.

    ``wikipedia`` configures the live source (API URL, contact, rate, timeouts, retries, its
    longest article; the commands pick it from the settings); ``stop`` cuts the sources' waits
    short; ``replay_rate`` paces a file source to that many articles a second (None: as fast
    as read); ``max_article_bytes`` is a file source's longest article; ``clean`` replaces the
    in-process cleaning of wikitext (the scraper's is bounded in time and memory).
    """
    kind, _, arg = spec.partition(":")
    if replay_rate is not None and kind in ("jsonl", "dump"):
        from service.ingest.sources.pace import Paced

        inner = open_source(spec, stop=stop, max_article_bytes=max_article_bytes, clean=clean)
        return Paced(inner, replay_rate, stop)
    if kind == "jsonl" and arg:
        from service.ingest.sources.jsonl import JsonlSource

        return JsonlSource(arg, max_article_bytes=max_article_bytes, clean=clean)
    if kind == "dump" and arg:
        from service.ingest.sources.dump import DumpSource

        return DumpSource(arg, max_article_bytes=max_article_bytes, clean=clean)
    if kind == "wikipedia" and not arg:
        from service.ingest.sources.wikipedia import WikipediaSource

        if wikipedia is None:
            raise SourceError("the wikipedia source needs its configuration (WikipediaConfig)")
        return WikipediaSource(wikipedia, stop=stop, clean=clean)
    raise SourceError(f"unknown source {spec!r}: expected jsonl:PATH, dump:PATH or wikipedia")


def file_source(source: Source) -> FileSource | None:
    """The file behind ``source`` (paced or not), whose position a scraper keeps; None for a
    source that has no position (live Wikipedia)."""
    from service.ingest.sources.pace import Paced

    inner = source.source if isinstance(source, Paced) else source
    return inner if isinstance(inner, FileSource) else None
