"""A hostile or broken API cannot stop the live source: a real ``streamlda scrape`` against the
stand-in API answering deeply nested JSON, 150 MB bodies (announced, chunked without end, and
gzip-compressed) and JSON holding millions of empty lists, again and again, keeps running with
its memory well under 400 MB, then queues the articles of the first good answer.

Measured by hand over 25 s (nested JSON and 150 MB bodies, alternating): with the default
backoff (2 s, doubling) still running, 5 hostile answers, peak resident set 50 MiB; with a
0.05-0.2 s backoff still running, 128 hostile answers, 50 MiB. Adding the endless, gzip and
empty-lists answers: 58 MiB, and 256 MiB once an empty-lists answer (the most objects a decoder
makes of a byte) is decoded. This test takes the same answers in about 7 s."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from service.ingest.queue import ArticleQueue, QueueConfig
from service.store.redis_client import connect
from tests.service.ingest.helpers import fast_settings
from tests.support.corpora import RawPage
from tests.support.redis_server import RedisServer
from tests.support.wikipedia_api import FakeWikipediaAPI

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-c", "import sys; from service.cli import main; sys.exit(main())"]
HOSTILE = ("nested", "huge", "endless", "gzip_bomb")
ROUNDS = 4  # of every hostile answer, before the good ones
MOST_RSS = 400 * 1024 * 1024
QUEUED = 10


def _peak_rss(pid: int) -> int:
    """The process's peak resident set so far, bytes (0 once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    kib = next((line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")), 0)
    return int(kib) * 1024


def test_the_live_source_outlives_a_hostile_api(redis_server: RedisServer) -> None:
    pages = [
        RawPage(pageid=n, ns=0, title=f"River {n}", wikitext=f"'''River {n}''' runs [[east]].")
        for n in range(1, QUEUED + 1)
    ]
    with FakeWikipediaAPI(pages) as api:
        api.inject(*HOSTILE * ROUNDS, "wide")
        env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLDA_")}
        env.update(
            PYTHONPATH=str(REPO),
            STREAMLDA_WIKIPEDIA_API_URL=api.url,
            STREAMLDA_RATE="100",
            STREAMLDA_RETRY_BACKOFF="0.05",
            STREAMLDA_RETRY_BACKOFF_MAX="0.2",
            STREAMLDA_MAX_RETRIES="1000",
            STREAMLDA_ARTICLES_PER_REQUEST=str(QUEUED),
        )
        command = [*CLI, "scrape", "--source", "wikipedia", "--redis", redis_server.url]
        command += ["--limit", str(QUEUED)]
        process = subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
        peak, deadline = 0, time.monotonic() + 120
        try:
            while process.poll() is None and time.monotonic() < deadline:
                peak = max(peak, _peak_rss(process.pid))
                time.sleep(0.02)
            _, log = process.communicate(timeout=5)
        finally:
            process.kill()
        hostile = [r.outcome for r in api.requests if r.outcome != "ok"]

    assert process.returncode == 0, log[-3000:]
    assert "Traceback" not in log
    assert hostile == [*HOSTILE * ROUNDS, "wide"]  # every one answered, none ended the scraper
    assert 0 < peak < MOST_RSS, f"peak resident set {peak / 2**20:.0f} MiB"
    assert api.body_bytes_sent < 2 * ROUNDS * 64 * 2**20  # no 150 MB body was read through
    for reason in ("malformed_json: RecursionError", "too_large_response", "too_many_pages"):
        assert f"failed ({reason}" in log, reason
    settings = fast_settings(redis_url=redis_server.url)
    counters = ArticleQueue(connect(settings.store), settings.part(QueueConfig)).counters()
    assert counters["queued"] == QUEUED
    assert counters["failures"] == len(HOSTILE) * ROUNDS + 1
