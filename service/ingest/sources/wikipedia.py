"""Random English Wikipedia articles from the live MediaWiki Action API.

One request (``generator=random`` + ``prop=revisions``, ``rvslots=main``) brings up to
``articles_per_request`` random main-namespace pages with their current wikitext. The client is
polite by construction: a descriptive User-Agent with a contact, ``maxlag``, a timeout on every
request, at most ``rate`` requests per second (retries included), and retries with exponential
backoff and jitter that wait at least as long as ``Retry-After`` (429, 503, maxlag errors) asks.
Bad pages (missing, no revision, redirect, disambiguation, not wikitext, empty, longer than
``max_article_bytes``, or anything the cleaner cannot handle) are skipped and counted by reason.
A response is read as a stream and no further than :func:`response_bound` (decompressed), and
any answer that cannot be read or decoded (cut short, over the bound, not UTF-8, not JSON, or
nested too deep for the decoder) is a failed attempt like a 503: counted by reason, told to
:class:`SourceHealth`, and retried with backoff. Only a request that still fails after
``max_retries`` retries, or an error that retrying cannot fix, raises :class:`SourceError`.
Every wait ends as soon as the ``stop`` event is set (then :class:`SourceStopped`), so a
scraper told to stop never sits out a long Retry-After or backoff, nor reads on a long body.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3

from service.ingest.cleaning import clean_or_skip, is_disambiguation, is_redirect
from service.ingest.source_health import SourceHealth, describe_error
from service.ingest.sources.base import (
    MAX_ARTICLE_BYTES,
    Article,
    ArticleSkipped,
    Clean,
    SkipCounter,
    SourceError,
    SourceStopped,
    encoded_bound,
    too_large,
)

log = logging.getLogger(__name__)

SOURCE_NAME = "wikipedia"
CLIENT_NAME = "streamlda"
CLIENT_VERSION = "0.1.0"
# API error codes that say "try again later" rather than "this request is wrong".
TRANSIENT_API_ERRORS = frozenset(
    {"maxlag", "ratelimited", "readonly", "internal_api_error_DBQueryError", "unknownerror"}
)
# Bytes of a response body read at a time (decompressed), between looks at the bound and stop.
BODY_CHUNK = 64 * 1024
# The most pages MediaWiki answers to one request (grnlimit's ceiling, for bots); an answer with
# more is not the API's, and is not read page by page (each would be counted as skipped).
MOST_PAGES = 500
# Characters of an unexpected answer's body quoted in its error.
QUOTED_CHARS = 200


def response_bound(max_article_bytes: int) -> int:
    """The most bytes of one API response read: what a jsonl line may take for the same
    article bound. Wikimedia caps a result at 8 MiB (``$wgAPIMaxResultSize``), the default's
    bound; an answer that large is rare even there, and its retry brings other random pages."""
    return encoded_bound(max_article_bytes)


def user_agent(contact: str) -> str:
    """User-Agent following the Wikimedia policy: client/version (contact) library/version."""
    return (
        f"{CLIENT_NAME}/{CLIENT_VERSION} (streaming LDA topic model; {contact}) "
        f"python-requests/{requests.__version__}"
    )


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds asked by a Retry-After header (delta-seconds or an HTTP date), None if absent."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


class RateLimiter:
    """At most ``rate`` calls of :meth:`wait` per second, evenly spaced (thread-safe)."""

    def __init__(
        self,
        rate: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self.interval = 1.0 / rate
        self._clock = clock
        self._sleep = sleep
        self._next = clock()
        self._lock = threading.Lock()

    def wait(self) -> float:
        """Block until the next call is allowed; return the seconds waited."""
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.interval
        waited = start - now
        if waited > 0:
            self._sleep(waited)
        return waited


@dataclass
class _Failure:
    """Why one attempt failed (a kind, counted, and in words), and how long the server asked us
    to wait (if it did)."""

    reason: str
    retry_after: float | None = None
    detail: str = ""

    @property
    def cause(self) -> str:
        return f"{self.reason}: {self.detail}" if self.detail else self.reason


@dataclass(frozen=True)
class WikipediaConfig:
    """The live source's settings (same names): the API, who asks, how fast and how patiently."""

    wikipedia_api_url: str
    contact: str
    rate: float
    maxlag: int
    articles_per_request: int
    max_retries: int
    retry_backoff: float
    retry_backoff_max: float
    request_timeout: float
    source_down_after_s: float
    max_article_bytes: int = MAX_ARTICLE_BYTES


class WikipediaSource:
    """Endless random main-namespace articles; :meth:`fetch_batch` is one API request."""

    name = SOURCE_NAME

    def __init__(
        self,
        config: WikipediaConfig,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], object] | None = None,
        seed: int | None = None,
        stop: threading.Event | None = None,
        clean: Clean | None = None,
    ) -> None:
        """``sleep`` (tests) replaces waiting on ``stop``, which ends every wait once set;
        ``clean`` replaces the in-process cleaning of wikitext (the scraper's is bounded)."""
        self.config = config
        self.clean: Clean = clean or clean_or_skip
        self.skipped = SkipCounter()
        self.requests = 0  # HTTP requests sent, retries included
        self.retries = 0  # attempts repeated after a failure
        self.waited_s = 0.0  # seconds spent in backoff and Retry-After waits
        self.failures: dict[str, int] = {}  # failed attempts by reason
        self.stop = stop or threading.Event()
        self._sleep = sleep if sleep is not None else self.stop.wait
        self._rng = random.Random(seed)
        self._limiter = RateLimiter(self.config.rate, sleep=self._sleep)
        self.session = session or requests.Session()
        self.session.headers["User-Agent"] = user_agent(self.config.contact)
        self.session.headers["Accept"] = "application/json"
        self.host = urlsplit(config.wikipedia_api_url).netloc.rpartition("@")[2]
        # Says when failures have lasted source_down_after_s (the scraper publishes it).
        self.health = SourceHealth(
            SOURCE_NAME,
            self.host,
            config.source_down_after_s,
            hint="check the network, or STREAMLDA_WIKIPEDIA_API_URL",
        )

    # --- the Source interface --------------------------------------------------------------
    def __iter__(self) -> Iterator[Article]:
        for batch in self.batches():
            yield from batch

    def batches(self) -> Iterator[list[Article]]:
        """One list of articles per API request, forever."""
        while True:
            yield self.fetch_batch()

    def close(self) -> None:
        """Close the HTTP connections."""
        self.session.close()

    # --- one request -----------------------------------------------------------------------
    def params(self, limit: int) -> dict[str, str]:
        """Query parameters of one request for ``limit`` random articles with their wikitext."""
        return {
            "action": "query",
            "format": "json",
            "formatversion": "2",
            "generator": "random",
            "grnnamespace": "0",
            "grnfilterredir": "nonredirects",
            "grnlimit": str(limit),
            "prop": "revisions|pageprops",
            "rvprop": "ids|content",
            "rvslots": "main",
            "ppprop": "disambiguation",
            "maxlag": str(self.config.maxlag),
        }

    def fetch_batch(self, limit: int | None = None) -> list[Article]:
        """Articles of one successful API request (after retries); skipped pages are counted."""
        most = self.config.articles_per_request
        data = self._query(self.params(max(1, min(limit or most, most))))
        query = data.get("query")
        pages = query.get("pages") if isinstance(query, dict) else None
        if not isinstance(pages, list):
            self.skipped.skip("no_pages")
            return []
        articles = []
        for page in pages:
            article = self._article(page)
            if article is not None:
                articles.append(article)
        return articles

    def _query(self, params: dict[str, str]) -> dict[str, Any]:
        attempt = 0
        while True:
            self._limiter.wait()
            self._check_stop("waiting for the rate limit")
            self.requests += 1
            result = self._attempt(params)
            if not isinstance(result, _Failure):
                self.health.succeeded()
                return result
            self.failures[result.reason] = self.failures.get(result.reason, 0) + 1
            attempt += 1
            if attempt > self.config.max_retries:
                self.health.failed(result.cause)
                raise SourceError(
                    f"{self.config.wikipedia_api_url}: gave up after {attempt} attempts "
                    f"(last: {result.reason})" + (f": {result.detail}" if result.detail else "")
                )
            delay = self._backoff(attempt)
            if result.retry_after is not None:
                delay = max(delay, result.retry_after)
            self.retries += 1
            log.warning(
                "API request to %s failed (%s); retry %d/%d in %.2f s",
                self.host,
                result.cause,
                attempt,
                self.config.max_retries,
                delay,
            )
            self.health.failed(result.cause)
            self.waited_s += delay
            self._wait(delay)
            self._check_stop(f"waiting to retry ({result.reason})")

    def _wait(self, delay: float) -> None:
        """Sleep ``delay`` seconds, reporting the source unreachable on time if it falls due
        meanwhile (backoffs grow to minutes; the report may not wait for the next attempt)."""
        due = self.health.due_in()
        if due is not None and due < delay:
            self._sleep(due)
            self.health.check()
            delay -= due
        self._sleep(delay)

    def _check_stop(self, what: str) -> None:
        if self.stop.is_set():
            raise SourceStopped(f"stopped while {what}")

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with 'equal jitter': half fixed, half random."""
        ceiling = min(self.config.retry_backoff_max, self.config.retry_backoff * 2 ** (attempt - 1))
        return ceiling / 2 + self._rng.uniform(0, ceiling / 2)

    def _attempt(self, params: dict[str, str]) -> dict[str, Any] | _Failure:
        url = self.config.wikipedia_api_url
        try:
            response = self.session.get(
                url, params=params, timeout=self.config.request_timeout, stream=True
            )
        except requests.Timeout as exc:
            return _Failure("timeout", detail=describe_error(exc))
        except requests.ConnectionError as exc:
            return _Failure("connection", detail=describe_error(exc))
        except requests.RequestException as exc:
            raise SourceError(f"{url}: {exc}") from exc
        with response:  # closed unread past what is taken: the connection is dropped, not reused
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            status = response.status_code
            if status == 429 or status >= 500:
                return _Failure(f"http_{status}", retry_after, f"HTTP {status} {response.reason}")
            if status != 200:
                head = self._body(response, QUOTED_CHARS, quote=True)
                quoted = head.decode("utf-8", "replace") if isinstance(head, bytes) else ""
                raise SourceError(f"{url} answered HTTP {status}: {quoted!r}")
            body = self._body(response, response_bound(self.config.max_article_bytes))
        if isinstance(body, _Failure):
            body.retry_after = retry_after
            return body
        try:
            data = json.loads(body)
        except (ValueError, RecursionError, MemoryError) as exc:  # RecursionError: too deep
            self.skipped.skip("malformed_json")
            return _Failure("malformed_json", retry_after, f"{type(exc).__name__}: {exc}"[:200])
        if not isinstance(data, dict):
            self.skipped.skip("malformed_json")
            return _Failure("malformed_json", retry_after, f"a JSON {type(data).__name__}")
        error = data.get("error")
        if isinstance(error, dict):
            code = str(error.get("code", "unknown"))[:QUOTED_CHARS]
            info = str(error.get("info", ""))[:QUOTED_CHARS]
            if code in TRANSIENT_API_ERRORS:
                if retry_after is None and code == "maxlag":
                    retry_after = float(self.config.maxlag)
                return _Failure(f"api_{code}", retry_after, info)
            raise SourceError(f"{url}: API error {code}: {info}")
        query = data.get("query")
        pages = query.get("pages") if isinstance(query, dict) else None
        if isinstance(pages, list) and len(pages) > MOST_PAGES:  # never from MediaWiki: unread
            return _Failure("too_many_pages", retry_after, f"{len(pages)}, over {MOST_PAGES}")
        return data

    def _body(
        self, response: requests.Response, most: int, quote: bool = False
    ) -> bytes | _Failure:
        """The body's first ``most`` bytes (decompressed) when ``quote``, else the whole body,
        or a failure if it is longer (announced or read), or cannot be read. The stop event is
        looked at between chunks, so a stop never waits for a long body."""
        declared = response.headers.get("Content-Length", "")
        if not quote and declared.isdigit() and int(declared) > most:
            return _Failure("too_large_response", detail=f"{declared} bytes, over {most}")
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_content(min(most, BODY_CHUNK)):
                self._check_stop("reading a response")
                chunks.append(chunk)
                size += len(chunk)
                if size >= most:
                    if quote:
                        break
                    if size > most:
                        return _Failure("too_large_response", detail=f"over {most} bytes")
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            # cut short, bad chunking or compression, a read timed out
            return _Failure("broken_response", detail=describe_error(exc))
        return b"".join(chunks)[:most] if quote else b"".join(chunks)

    # --- one page --------------------------------------------------------------------------
    def _article(self, page: object) -> Article | None:
        try:
            reason, article = self._parse_page(page)
        except ArticleSkipped as skipped:
            self.skipped.skip(skipped.reason, self._where(page), skipped.detail)
            return None
        except Exception as exc:  # any other failure is this page's, not the source's
            self.skipped.skip("unparsable", self._where(page), f"{type(exc).__name__}: {exc}")
            return None
        if reason is not None:
            self.skipped.skip(reason)
        return article

    @staticmethod
    def _where(page: object) -> str:
        pageid = page.get("pageid") if isinstance(page, dict) else None
        return f"{SOURCE_NAME} page {pageid}"

    def _parse_page(self, page: object) -> tuple[str | None, Article | None]:
        if not isinstance(page, dict):
            return "malformed_page", None
        if page.get("missing") or page.get("invalid"):
            return "missing", None
        page_id, title = page.get("pageid"), page.get("title")
        if not isinstance(page_id, int) or isinstance(page_id, bool):
            return "missing_fields", None
        if not isinstance(title, str) or not title:
            return "missing_fields", None
        if page.get("ns", 0) != 0:
            return "namespace", None
        revisions = page.get("revisions")
        if not isinstance(revisions, list) or not revisions:
            return "no_revisions", None
        slot = revisions[0].get("slots", {}).get("main") if isinstance(revisions[0], dict) else None
        content = slot.get("content") if isinstance(slot, dict) else None
        if not isinstance(content, str):
            return "no_content", None
        if slot.get("contentmodel", "wikitext") != "wikitext":  # type: ignore[union-attr]
            return "not_wikitext", None
        if too_large(content, self.config.max_article_bytes):
            raise ArticleSkipped("too_large", f"over {self.config.max_article_bytes} bytes")
        if page.get("redirect") or is_redirect(content):
            return "redirect", None
        pageprops = page.get("pageprops")
        if (isinstance(pageprops, dict) and "disambiguation" in pageprops) or is_disambiguation(
            title, content
        ):
            return "disambiguation", None
        article_id, title = self.skipped.capped(str(page_id), title, self._where(page))
        text = self.clean(content)
        if not text:
            return "empty", None
        return None, Article(id=article_id, title=title, text=text, source=SOURCE_NAME)
