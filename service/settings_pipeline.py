"""The settings groups of the pipeline around the learner: Redis, the queue, the scrapers, `up`
and the API (each a field of :class:`service.settings.Settings`, which reads them from the
environment and the flags)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field

from service import keys
from service.settings_learning import Flag, Group

# The longest article a source accepts, bytes of raw text (why: docs/defaults.md); the sources
# use it where no setting is given.
MAX_ARTICLE_BYTES = 4 * 1024 * 1024


class StoreSettings(Group):
    """Where state is kept: Redis and the data directory."""

    data_dir: Annotated[
        Path,
        Flag("--data-dir", "where checkpoints are written", ("worker",)),
        Flag("--data-dir", "checkpoints and the embedded Redis's files", ("up",)),
    ] = Field(default=Path("data"), description="Checkpoints and the embedded Redis's files")
    redis_url: Annotated[
        str | None,
        Flag("--redis", "Redis URL", ("scrape", "api", "worker", "export"), metavar="URL"),
        Flag("--redis", "use this Redis instead of the embedded one", ("up",), metavar="URL"),
    ] = Field(default=None, description="Redis URL; unset with `up`: embedded Redis")
    queue_timeout: float = Field(
        default=10.0,
        gt=0,
        description="Seconds before a Redis command of the scraper or queue fails",
    )
    redis_retry_first: float = Field(
        default=0.5, gt=0, description="First wait (s) before reconnecting to an unavailable Redis"
    )
    redis_retry_max: float = Field(
        default=2.0,
        gt=0,
        description="Longest wait (s) between reconnection attempts to Redis: learning and "
        "scraping resume within this of Redis answering again",
    )


class QueueSettings(Group):
    """The stream of articles in Redis, shared by the scrapers and the workers."""

    stream: str = Field(default=keys.DEFAULT_STREAM, description="Redis stream of articles")
    group: str = Field(default=keys.DEFAULT_GROUP, description="Consumer group of the workers")
    stream_high_water: Annotated[
        int,
        Flag("--high-water", "stream length at which the scraper waits", ("scrape",), "N"),
    ] = Field(
        default=5000,
        ge=1,
        description="Unread stream entries (not yet read by a worker): scrapers wait",
    )
    claim_after_ms: int = Field(
        default=60_000, ge=100, description="Reclaim entries pending this long"
    )
    dedupe_key: str = Field(
        default=keys.DEFAULT_DEDUPE_KEY, description="Redis set of page ids ever queued"
    )
    counters_key: str = Field(
        default=keys.DEFAULT_COUNTERS_KEY, description="Redis hash of the scrapers' counters"
    )
    backpressure_poll: float = Field(
        default=1.0, gt=0, description="Seconds between checks of a full stream (scraper waiting)"
    )
    heldout_key: str = Field(
        default=keys.DEFAULT_HELDOUT_KEY,
        description="Redis list of the held-out articles (survives restarts)",
    )


class ScraperSettings(Group):
    """The scrapers: where articles come from, and how fast."""

    source: Annotated[
        str,
        Flag("--source", "wikipedia (default), dump:PATH or jsonl:PATH", ("scrape", "up")),
        Flag("--source", "jsonl:PATH, dump:PATH or wikipedia", ("train",), required=True),
    ] = Field(default="wikipedia", description="wikipedia, dump:PATH or jsonl:PATH")
    wikipedia_api_url: Annotated[
        str,
        Flag("--api-url", "MediaWiki Action API endpoint", ("scrape",), "URL"),
        Flag("--api-url", "MediaWiki Action API endpoint of the scraper", ("up",), "URL"),
    ] = Field(
        default="https://en.wikipedia.org/w/api.php", description="MediaWiki Action API endpoint"
    )
    contact: Annotated[
        str, Flag("--contact", "contact (e-mail or URL) sent in the User-Agent", ("scrape",))
    ] = Field(default="streamlda-operator@example.org", description="Contact put in the User-Agent")
    rate: Annotated[float, Flag("--rate", "maximum API requests per second", ("scrape",))] = Field(
        default=1.0, gt=0, description="Maximum API requests per second"
    )
    replay_rate: Annotated[
        float | None,
        Flag(
            "--replay-rate",
            "articles per second from a jsonl: or dump: source (default: as fast as read)",
            ("scrape", "up"),
            "R",
        ),
    ] = Field(
        default=None,
        gt=0,
        description="Articles per second a jsonl: or dump: source yields, to replay a live "
        "stream's pace (unset: as fast as the queue takes them)",
    )
    max_article_bytes: Annotated[
        int,
        Flag(
            "--max-article-bytes",
            "longest article accepted, in bytes of raw text (longer ones are skipped)",
            ("scrape",),
            "N",
        ),
        Flag(
            "--max-article-bytes",
            "longest article the scraper accepts, in bytes of raw text (longer: skipped)",
            ("up",),
            "N",
        ),
    ] = Field(
        default=MAX_ARTICLE_BYTES,
        ge=1024,
        description="Longest article a source accepts, in bytes of raw text: a longer line or "
        "page is skipped as too_large, never held whole (why 4 MiB: docs/defaults.md)",
    )
    request_timeout: float = Field(
        default=30.0, gt=0, description="Seconds before an API request fails"
    )
    max_retries: int = Field(default=8, ge=0, description="Retries of a failing API request")
    articles_per_request: int = Field(
        default=50, ge=1, le=500, description="Random articles per request"
    )
    maxlag: int = Field(
        default=5, ge=0, description="MediaWiki maxlag: back off when replicas lag more"
    )
    retry_backoff: float = Field(
        default=2.0,
        gt=0,
        description="First wait (s) of the exponential backoff between API retries",
    )
    retry_backoff_max: float = Field(
        default=120.0,
        gt=0,
        description="Longest wait (s) between API retries, Retry-After excepted",
    )
    source_down_after_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds a source may fail without answering before the scraper reports it "
        "unreachable (an ERROR, and a status on /stats and the page)",
    )


class UpSettings(Group):
    """`up`, the supervisor of every process on one machine."""

    workers: Annotated[
        int,
        Flag(
            "--workers",
            "worker ranks learning one model together (torchrun on this machine)",
            ("up",),
        ),
    ] = Field(
        default=1, ge=1, description="up: worker ranks learning one model together (torchrun)"
    )
    stop_timeout_s: float = Field(
        default=60.0, gt=0, description="`up`: seconds each child gets to exit before it is killed"
    )
    redis_start_timeout_s: float = Field(
        default=10.0, gt=0, description="`up`: seconds the embedded Redis gets to answer PING"
    )
    restart_delay_first_s: float = Field(
        default=1.0,
        gt=0,
        description="`up`: wait (s) before restarting a crashed child; doubles per crash",
    )
    restart_delay_max_s: float = Field(
        default=60.0, gt=0, description="`up`: longest wait (s) before a restart"
    )
    restart_stable_s: float = Field(
        default=10.0,
        gt=0,
        description="`up`: a child that ran at least this long before it died starts again "
        "after the first wait; only one dying sooner (a crash loop) waits longer each time",
    )


class ApiSettings(Group):
    """The HTTP API and its page."""

    host: Annotated[
        str,
        Flag("--host", "bind address (default from STREAMLDA_HOST)", ("api",)),
        Flag("--host", "API bind address", ("up",)),
    ] = Field(default="127.0.0.1", description="API bind address")
    port: Annotated[
        int,
        Flag("--port", "port (default from STREAMLDA_PORT)", ("api",)),
        Flag("--port", "API port", ("up",)),
    ] = Field(default=8000, ge=1, le=65535, description="API port")
    api_workers: Annotated[
        int,
        Flag(
            "--api-workers",
            "API processes on the port (default from STREAMLDA_API_WORKERS)",
            ("api",),
        ),
        Flag("--api-workers", "API processes serving the port (uvicorn workers)", ("up",)),
    ] = Field(
        default=1,
        ge=1,
        description="API processes serving one port (uvicorn workers; the API keeps no state "
        "beyond its cache of Redis)",
    )
    cors_origins: list[str] = Field(default_factory=list, description="Origins allowed by CORS")
    admin_token: str | None = Field(
        default=None, description="Bearer token of admin endpoints (off if unset)"
    )
    max_infer_bytes: int = Field(default=1_000_000, ge=1, description="Largest /infer body")
    max_infer_texts: int = Field(
        default=1_000,
        ge=1,
        description="Most texts in one /infer/batch (more: 422), which bounds its answer: one "
        "/infer answer each",
    )
    search_limit_max: int = Field(
        default=100,
        ge=1,
        description="Most articles one search answers (the largest limit= of "
        "/topics/{id}/articles, /similar and /articles/{id}/similar)",
    )
    infer_concurrency: int = Field(
        default=1,
        ge=1,
        description="/infer inference threads per API process (each splitting its batch over "
        "infer_threads threads); the requests waiting for one are inferred together as one batch",
    )
    infer_threads: int | None = Field(
        default=None,
        ge=1,
        description="threads each batch's fixed points are split over (unset: the cores this "
        "process may use over infer_concurrency; their product should fit the cores: more only "
        "make them compete)",
    )
    infer_queue: int = Field(
        default=64,
        ge=1,
        description="/infer requests taken at once (sending their body, waiting or running; "
        "each holds at most max_infer_bytes); more get 503 with Retry-After at once. Also the "
        "search answers being made at once (those not kept: docs/api.md, 'Search')",
    )
    infer_retry_after_s: int = Field(
        default=1,
        ge=0,
        description="Retry-After (s) of a /infer refused because infer_queue are taken",
    )
    body_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Seconds a client gets to send a request body; a slower one gets 408 and "
        "frees its place",
    )
    api_refresh_s: float = Field(
        default=0.25,
        gt=0,
        description="Seconds between the API's checks of Redis: how stale topics, perplexity, "
        "stats and metrics may be",
    )
    render_cache: int = Field(
        default=256,
        ge=1,
        description="Responses kept rendered per snapshot (distinct ?top=, ?estimate= and topic "
        "ids)",
    )
    infer_iterations: int = Field(default=100, ge=1, description="Fixed-point iterations of /infer")
    infer_tolerance: float = Field(
        default=1e-6, gt=0, description="/infer stops once no topic proportion moves more than this"
    )
    redis_timeout: float = Field(
        default=2.0, gt=0, description="Seconds before an API call to Redis fails (then 503)"
    )
    page_refresh_s: float = Field(
        default=5.0, gt=0, description="Seconds between refreshes of the page /"
    )
    topic_name_max: int = Field(
        default=100, ge=1, description="Longest topic name an operator may set, in characters"
    )
    seed_words_max: int = Field(
        default=20, ge=1, description="Most seed words an operator may give one topic"
    )
    seed_strength_max: float = Field(
        default=100.0,
        gt=0,
        description="Largest seed strength an operator may set (percent of an average topic's "
        "tokens)",
    )
    access_log: bool = Field(
        default=False,
        description="Log every HTTP request (a line each: costly under hundreds of pollers)",
    )

    @property
    def inference_threads(self) -> int:
        """Threads each /infer batch is split over: the setting, else this process's cores
        shared by the infer_concurrency inference threads (a single text is never split)."""
        if self.infer_threads is not None:
            return self.infer_threads
        usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        cores = len(usable) if usable else (os.cpu_count() or 1)
        return max(1, cores // self.infer_concurrency)
