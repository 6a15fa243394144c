"""Where articles come from: one small interface shared by training, the scraper and replays.

A source is an iterable of :class:`Article` (plain text, already cleaned of wikitext).
``open_source("jsonl:PATH")``, ``open_source("dump:PATH")`` and ``open_source("wikipedia")``
name them on the command line.
"""

from __future__ import annotations

import threading

from service.ingest.sources.base import (
    Article,
    SkipCounter,
    Source,
    SourceError,
    SourceStopped,
    require_file,
)

__all__ = [
    "Article",
    "SkipCounter",
    "Source",
    "SourceError",
    "SourceStopped",
    "open_source",
    "require_file",
]


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
