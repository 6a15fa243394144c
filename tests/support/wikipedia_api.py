"""A stand-in for the MediaWiki Action API on 127.0.0.1, serving real articles, with faults.

It answers ``action=query&generator=random&prop=revisions&rvslots=main&format=json&
formatversion=2`` the way en.wikipedia.org does (same JSON shape, ``pageprops`` for
disambiguation pages when ``ppprop=disambiguation`` is asked, ``grnfilterredir`` honoured),
from a pool of :class:`~support.corpora.RawPage`. "Random" pages are dealt from a seeded,
shuffled deck, so every page of the pool is served once before any is served again.

Faults are queued with :meth:`FakeWikipediaAPI.inject` and consumed one per request, in order:

* ``"429"``: HTTP 429 with ``Retry-After: retry_after``;
* ``"503"``: HTTP 503 (an HTML error page, as a cache layer answers);
* ``"maxlag"``: HTTP 200 with the API's maxlag error body, ``Retry-After`` and
  ``X-Database-Lag`` headers;
* ``"reset"``: the TCP connection is reset without an answer;
* ``"slow"``: the answer comes only after ``slow_seconds`` (beyond the client's timeout);
* ``"malformed"``: HTTP 200 with a truncated JSON body;
* ``"empty_revisions"``: a normal answer plus broken pages (an empty revision list, no
  revisions, a hidden revision text, a missing page) that a client must skip;
* ``"nested"``: HTTP 200 with JSON nested ``nested_depth`` deep (a decoder's RecursionError);
* ``"huge"``: HTTP 200 announcing and sending ``huge_bytes`` of JSON (150 MB by default);
* ``"endless"``: HTTP 200, chunked, a JSON string that never ends (until the client hangs up);
* ``"gzip_bomb"``: HTTP 200, ``Content-Encoding: gzip``, ``huge_bytes`` compressed to ~0.1%;
* ``"wide"``: HTTP 200, ``wide_bytes`` of JSON holding nothing but empty lists (the most
  objects a decoder makes of a byte).

Failing answers never deal pages from the deck, so a fault loses no article. Redirect pages of
the pool are left out (as ``grnfilterredir=nonredirects`` asks) unless ``serve_redirects``.
Every request is recorded (:class:`RequestRecord`) for assertions on timing and headers.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import random
import re
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.corpora import RawPage

FAULTS = (
    "429",
    "503",
    "maxlag",
    "reset",
    "slow",
    "malformed",
    "empty_revisions",
    "nested",
    "huge",
    "endless",
    "gzip_bomb",
    "wide",
)
API_PATH = "/w/api.php"
MAX_PAGES_WITH_CONTENT = 50  # the API's cap on pages per request with revision content

# Independent of service.ingest.cleaning on purpose: how the Disambiguator extension would
# flag pages.
_DISAMBIGUATION = re.compile(r"\{\{\s*(disambiguation|disambig|dab|geodis|hndis)\b", re.I)


def is_disambiguation_page(page: RawPage) -> bool:
    """What the server reports in ``pageprops.disambiguation``."""
    return page.title.endswith("(disambiguation)") or bool(_DISAMBIGUATION.search(page.wikitext))


@dataclass
class RequestRecord:
    """One request as the server saw it."""

    started: float  # time.monotonic() when the request line was read
    params: dict[str, str]
    headers: dict[str, str]
    outcome: str = "ok"  # "ok" or the fault served
    pageids: list[int] = field(default_factory=list)  # pool pages dealt in the answer
    finished: float = 0.0  # time.monotonic() when the answer was written


class FakeWikipediaAPI:
    """The stand-in server; a context manager (``with FakeWikipediaAPI(pages) as api:``)."""

    def __init__(
        self,
        pages: Iterable[RawPage],
        *,
        seed: int = 0,
        retry_after: int = 1,
        slow_seconds: float = 2.0,
        serve_redirects: bool = False,
        disambiguation_pageprops: bool = True,
        nested_depth: int = 100_000,
        huge_bytes: int = 150_000_000,
        wide_bytes: int = 8_000_000,
    ) -> None:
        self.pages = tuple(pages)
        self.retry_after = retry_after
        self.slow_seconds = slow_seconds
        self.nested_depth = nested_depth
        self.huge_bytes = huge_bytes
        self.wide_bytes = wide_bytes
        self.body_bytes_sent = 0  # bytes of hostile bodies (huge, endless) written to clients
        self._bomb: bytes | None = None
        self._closing = threading.Event()  # ends endless answers when the server stops
        self.serve_redirects = serve_redirects
        self.disambiguation_pageprops = disambiguation_pageprops
        self.requests: list[RequestRecord] = []
        self._faults: deque[str] = deque()
        self._rng = random.Random(seed)
        self._deck: list[RawPage] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The API endpoint, like https://en.wikipedia.org/w/api.php."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}{API_PATH}"

    def start(self) -> FakeWikipediaAPI:
        """Serve in a background thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, daemon=True, kwargs={"poll_interval": 0.05}
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port."""
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeWikipediaAPI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- knobs and what happened -----------------------------------------------------------
    def inject(self, *faults: str) -> None:
        """Queue faults for the next requests, one per request, in order."""
        for fault in faults:
            if fault not in FAULTS:
                raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        if "gzip_bomb" in faults:
            self.gzip_bomb()  # made now: making it while answering would outlast a timeout
        with self._lock:
            self._faults.extend(faults)

    @property
    def faults_left(self) -> int:
        with self._lock:
            return len(self._faults)

    def gzip_bomb(self) -> bytes:
        """``huge_bytes`` of a JSON string, gzip-compressed (made once)."""
        with self._lock:
            if self._bomb is None:
                self._bomb = gzip.compress(_padded_json(self.huge_bytes), compresslevel=9)
            return self._bomb

    def servable(self) -> list[RawPage]:
        """Pages the random generator can return (main namespace; redirects if served)."""
        return [p for p in self.pages if p.ns == 0 and (self.serve_redirects or not p.redirect)]

    def good_pages(self) -> list[RawPage]:
        """Servable pages that are articles: not redirects, not disambiguation pages."""
        return [
            p
            for p in self.servable()
            if not p.redirect
            and not p.wikitext.lstrip().upper().startswith("#REDIRECT")
            and not is_disambiguation_page(p)
        ]

    def served_ids(self) -> list[int]:
        """Pool page ids dealt in successful answers, in order (repeats included)."""
        with self._lock:
            return [pid for record in self.requests for pid in record.pageids]

    # --- answering -------------------------------------------------------------------------
    def _next_fault(self) -> str | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def _deal(self, count: int, allow_redirects: bool) -> list[RawPage]:
        with self._lock:
            dealt: list[RawPage] = []
            candidates = [
                p for p in self.pages if p.ns == 0 and (allow_redirects or not p.redirect)
            ]
            if not candidates:
                return dealt
            while len(dealt) < count:
                if not self._deck:
                    self._deck = list(candidates)
                    self._rng.shuffle(self._deck)
                dealt.append(self._deck.pop())
            return dealt

    def _page_json(self, page: RawPage, with_pageprops: bool) -> dict[str, Any]:
        item: dict[str, Any] = {
            "pageid": page.pageid,
            "ns": page.ns,
            "title": page.title,
            "revisions": [
                {
                    "revid": page.pageid * 10 + 1,
                    "parentid": page.pageid * 10,
                    "slots": {
                        "main": {
                            "contentmodel": "wikitext",
                            "contentformat": "text/x-wiki",
                            "content": page.wikitext,
                        }
                    },
                }
            ],
        }
        if with_pageprops and self.disambiguation_pageprops and is_disambiguation_page(page):
            item["pageprops"] = {"disambiguation": ""}
        return item

    def answer(
        self, params: dict[str, str], record: RequestRecord
    ) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body for one request (faults aside)."""
        problem = _check_params(params)
        if problem is not None:
            code, info = problem
            error = {"error": {"code": code, "info": info}, "servedby": "stand-in"}
            return 200, {"MediaWiki-API-Error": code}, json.dumps(error).encode()
        count = min(int(params.get("grnlimit", "1")), MAX_PAGES_WITH_CONTENT)
        allow_redirects = self.serve_redirects or params.get("grnfilterredir") != "nonredirects"
        pages = self._deal(count, allow_redirects)
        record.pageids = [p.pageid for p in pages]
        with_pageprops = "pageprops" in params.get("prop", "").split("|") and (
            "disambiguation" in params.get("ppprop", "").split("|")
        )
        items = [self._page_json(p, with_pageprops) for p in pages]
        if record.outcome == "empty_revisions":
            items += _broken_pages()
        body: dict[str, Any] = {
            "batchcomplete": True,
            "continue": {"grncontinue": "0.123|0.456|0|0", "continue": "grncontinue||"},
            "query": {"pages": items},
        }
        return 200, {}, json.dumps(body).encode()


def _check_params(params: dict[str, str]) -> tuple[str, str] | None:
    """The API's complaint about a request this stand-in cannot answer, if any."""
    required = {
        "action": "query",
        "format": "json",
        "formatversion": "2",
        "generator": "random",
        "rvslots": "main",
        "grnnamespace": "0",
    }
    for name, value in required.items():
        if params.get(name) != value:
            return "badvalue", f"stand-in expects {name}={value}, got {params.get(name)!r}"
    if "revisions" not in params.get("prop", "").split("|"):
        return "badvalue", "stand-in expects prop=revisions"
    if "content" not in params.get("rvprop", "").split("|"):
        return "badvalue", "stand-in expects rvprop=content"
    return None


def _broken_pages() -> list[dict[str, Any]]:
    """Pages a client must skip: no revisions, empty revisions, hidden text, missing."""
    return [
        {"pageid": 990_000_001, "ns": 0, "title": "Empty revision list", "revisions": []},
        {"pageid": 990_000_002, "ns": 0, "title": "No revisions key"},
        {
            "pageid": 990_000_003,
            "ns": 0,
            "title": "Hidden text",
            "revisions": [{"revid": 1, "slots": {"main": {"texthidden": True}}}],
        },
        {"ns": 0, "title": "Missing page", "missing": True},
    ]


def _padded_json(size: int) -> bytes:
    """A JSON object of exactly ``size`` bytes (at least 40): a string of spaces in it."""
    head, tail = b'{"batchcomplete": true, "padding": "', b'"}'
    return head + b" " * (size - len(head) - len(tail)) + tail


def _handler_class(api: FakeWikipediaAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def handle(self) -> None:
            # A client may hang up on a body it will not read (as it must, past its bound).
            with contextlib.suppress(ConnectionError):
                super().handle()

        def do_GET(self) -> None:
            started = time.monotonic()
            split = urlsplit(self.path)
            params = {k: v[-1] for k, v in parse_qs(split.query).items()}
            fault = api._next_fault()
            record = RequestRecord(started, params, dict(self.headers.items()), fault or "ok")
            with api._lock:
                api.requests.append(record)
            if split.path != API_PATH:
                self._send(404, {"Content-Type": "text/plain"}, b"Not Found")
            elif fault == "reset":
                self._reset()
            elif fault == "slow":
                time.sleep(api.slow_seconds)
                self._send(200, {}, b'{"batchcomplete": true, "query": {"pages": []}}')
            elif fault == "429":
                self._send(
                    429,
                    {"Retry-After": str(api.retry_after), "Content-Type": "text/plain"},
                    b"Too many requests",
                )
            elif fault == "503":
                self._send(
                    503,
                    {"Content-Type": "text/html"},
                    b"<html><body>Service Temporarily Unavailable</body></html>",
                )
            elif fault == "maxlag":
                error = {
                    "code": "maxlag",
                    "info": "Waiting for db1: 7 seconds lagged",
                    "host": "db1",
                    "lag": 7,
                    "type": "db",
                }
                lag = {"error": error, "servedby": "stand-in"}
                self._send(
                    200,
                    {
                        "Retry-After": str(api.retry_after),
                        "X-Database-Lag": "7",
                        "MediaWiki-API-Error": "maxlag",
                    },
                    json.dumps(lag).encode(),
                )
            elif fault == "malformed":
                self._send(200, {}, b'{"batchcomplete": true, "query": {"pages": [{"pageid": 1')
            elif fault == "nested":
                depth = api.nested_depth
                self._send(200, {}, b'{"query": {"pages": ' + b"[" * depth + b"]" * depth + b"}}")
            elif fault == "huge":
                self._send_huge()
            elif fault == "endless":
                self._send_endless()
            elif fault == "gzip_bomb":
                self._send(200, {"Content-Encoding": "gzip"}, api.gzip_bomb())
            elif fault == "wide":
                lists = (api.wide_bytes - 30) // 3
                self._send(200, {}, b'{"query": {"pages": [' + b"[]," * lists + b"[]]}}")
            else:
                status, headers, body = api.answer(params, record)
                self._send(status, headers, body)
            record.finished = time.monotonic()

        def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
            try:
                self.send_response(status)
                headers = {"Content-Type": "application/json; charset=utf-8", **headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                self.close_connection = True  # the client gave up (e.g. after its timeout)

        def _send_huge(self) -> None:
            """``huge_bytes`` of JSON, announced, written a MiB at a time."""
            piece = b" " * (1 << 20)
            body = _padded_json(64)
            head, tail = body[:-2], body[-2:]
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(api.huge_bytes))
                self.end_headers()
                self.wfile.write(head)
                left = api.huge_bytes - len(head) - len(tail)
                while left > 0 and not api._closing.is_set():
                    part = piece[:left]
                    self.wfile.write(part)
                    api.body_bytes_sent += len(part)
                    left -= len(part)
                self.wfile.write(tail)
            except OSError:
                pass
            self.close_connection = True

        def _send_endless(self) -> None:
            """A chunked JSON string of spaces, a MiB a chunk, until the client hangs up."""
            piece = b" " * (1 << 20)
            chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                head = b'{"padding": "'
                self.wfile.write(f"{len(head):x}\r\n".encode() + head + b"\r\n")
                while not api._closing.is_set():
                    self.wfile.write(chunk)
                    api.body_bytes_sent += len(piece)
            except OSError:
                pass
            self.close_connection = True

        def _reset(self) -> None:
            self.close_connection = True
            try:
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.connection.close()
            except OSError:
                pass

    return Handler


def default_pool(plain_articles: int = 402) -> list[RawPage]:
    """Every page of the raw dump sample (98 articles, 99 redirects, 8 disambiguation pages,
    1 non-article) plus ``plain_articles`` plain-text articles of shard 0: 500 good by default."""
    from tests.support.corpora import dump_pages, plain_records

    pool = list(dump_pages())
    pool += [
        RawPage(pageid=int(r["id"]), ns=0, title=r["title"], wikitext=r["text"])
        for r in plain_records(plain_articles)
    ]
    return pool
