"""``streamlda scrape``: fetch articles from a source into the Redis stream, without loss.

The command's flags, its stop signals and its start-up checks; the work is
:class:`service.ingest.scraper.Scraper`'s.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from types import FrameType

from service.errors import CommandError
from service.ingest.bounded_clean import BoundedCleaner
from service.ingest.queue import QueueConfig
from service.ingest.scraper import Scraper, ScraperConfig
from service.ingest.sources import Source, SourceError, open_source
from service.ingest.sources.wikipedia import WikipediaConfig
from service.redact import configure_logging, redact
from service.settings import Settings, add_flags
from service.store.redis_client import RedisURLError, connect
from service.store.redis_retry import RetryConfig

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``scrape`` subcommand."""
    p = subparsers.add_parser(
        "scrape",
        help="fetch articles from a source into the Redis stream",
        description="Fetch articles (live Wikipedia, a dump or JSON lines) into the Redis "
        "stream the workers learn from. Waits when the stream is full and when Redis is down.",
    )
    add_flags(p, "scrape")
    p.add_argument("--limit", type=int, metavar="N", help="stop after N articles queued")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    p.set_defaults(func=run)


def _install_stop_handlers(stop: threading.Event, signals: list[int]) -> None:
    """First SIGINT/SIGTERM: finish the batch in hand, then exit. Second: exit now. The signal
    is recorded in ``signals``: the exit code says the scraper was stopped, not finished."""

    def handle(signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        log.warning("signal %d: stopping after the batch in hand (again to stop now)", signum)
        signals.append(signum)
        stop.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handle)
        signal.signal(signal.SIGTERM, handle)


def run(settings: Settings, args: argparse.Namespace) -> int:
    """The ``scrape`` command."""
    configure_logging(getattr(args, "log_level", "INFO"))
    if not settings.store.redis_url:
        raise CommandError("no Redis: pass --redis URL or set STREAMLDA_REDIS_URL")
    limit = getattr(args, "limit", None)
    if limit is not None and limit < 1:
        raise CommandError(f"--limit must be at least 1, not {limit}")
    stop = threading.Event()  # ends every wait: the source's, backpressure's and Redis's
    # Wikitext is cleaned in a child, bounded; a stop abandons the page in the cleaner.
    with BoundedCleaner(stop=stop) as cleaner:
        try:
            source = open_source(
                settings.scraper.source,
                wikipedia=settings.part(WikipediaConfig),
                stop=stop,
                replay_rate=settings.scraper.replay_rate,
                max_article_bytes=settings.scraper.max_article_bytes,
                clean=cleaner,
            )
        except SourceError as exc:
            raise CommandError(str(exc)) from exc
        return _scrape(settings, source, stop, limit)


def _scrape(settings: Settings, source: Source, stop: threading.Event, limit: int | None) -> int:
    """Connect to Redis and scrape ``source`` until it ends, the limit, or a stop signal."""
    try:
        client = connect(settings.store)
    except RedisURLError as exc:
        raise CommandError(str(exc)) from None
    signals: list[int] = []
    _install_stop_handlers(stop, signals)
    scraper = Scraper(scraper_config(settings), source, client=client, limit=limit, stop=stop)
    log.info(
        "scraping %s into %s (stream %s, high-water %d)",
        source.name,
        redact(settings.store.redis_url),
        settings.queue.stream,
        settings.queue.stream_high_water,
    )
    try:
        scraper.run()
    except SourceError as exc:
        log.error("source failed: %s; %s", exc, scraper.totals.summary())
        return 1
    # 128 + the signal, the shell's convention: a supervisor tells stopped from finished.
    return 128 + signals[0] if signals else 0


def scraper_config(settings: Settings) -> ScraperConfig:
    """The scraper's part of the settings."""
    return ScraperConfig(
        queue=settings.part(QueueConfig),
        retry=settings.part(RetryConfig),
        articles_per_request=settings.scraper.articles_per_request,
    )
