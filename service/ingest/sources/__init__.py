"""Where articles come from: one small interface shared by training, the scraper and replays.

A source is an iterable of :class:`Article` (plain text, already cleaned of wikitext).
``open_source("jsonl:PATH")``, ``open_source("dump:PATH")`` and ``open_source("wikipedia")``
name them on the command line.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from service.ingest.sources.base import (
    Article,
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
    "Article",
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
) -> Source:
    """Open the source named by ``spec``: ``jsonl:PATH``, ``dump:PATH`` or ``wikipedia``.

    ``wikipedia`` configures the live source (API URL, contact, rate, timeouts, retries; the
    commands pick it from the settings); ``stop`` cuts the sources' waits short;
    ``replay_rate`` paces a file source to that many articles a second (None: as fast as read).
    """
    kind, _, arg = spec.partition(":")
    if replay_rate is not None and kind in ("jsonl", "dump"):
        from service.ingest.sources.pace import Paced

        return Paced(open_source(spec, stop=stop), replay_rate, stop)
    if kind == "jsonl" and arg:
        from service.ingest.sources.jsonl import JsonlSource

        return JsonlSource(arg)
    if kind == "dump" and arg:
        from service.ingest.sources.dump import DumpSource

        return DumpSource(arg)
    if kind == "wikipedia" and not arg:
        from service.ingest.sources.wikipedia import WikipediaSource

        if wikipedia is None:
            raise SourceError("the wikipedia source needs its configuration (WikipediaConfig)")
        return WikipediaSource(wikipedia, stop=stop)
    raise SourceError(f"unknown source {spec!r}: expected jsonl:PATH, dump:PATH or wikipedia")


def file_source(source: Source) -> FileSource | None:
    """The file behind ``source`` (paced or not), whose position a scraper keeps; None for a
    source that has no position (live Wikipedia)."""
    from service.ingest.sources.pace import Paced

    inner = source.source if isinstance(source, Paced) else source
    return inner if isinstance(inner, FileSource) else None
