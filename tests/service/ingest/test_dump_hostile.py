"""``streamlda scrape`` over a dump led by a page nested 200,000 deep and a 3 MB hostile page:
SIGTERM while the hostile page is parsed ends the scraper at once, with the articles before it
queued and the page left for the next run, which queues every other good page and counts the
page under ``parse_timeout`` after the parse's ceiling, not after its size's bound."""

from __future__ import annotations

import bz2
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from service.ingest.bounded_clean import PARSE_SECONDS_MAX, _cpu_seconds
from service.ingest.queue import ArticleQueue, QueueConfig
from service.store.redis_client import connect
from tests.service.ingest.helpers import fast_settings, stream_ids, wait_until
from tests.service.ingest.hostile import EXPORT_NS, _page
from tests.support.corpora import dump_pages, wikitext_records
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-c", "import sys; from service.cli import main; sys.exit(main())"]
BEFORE, AFTER = 5, 15  # good pages before the hostile one, and after it
DEEP = 200_000
HOSTILE = "Lead prose. " + "<ref name=" * 300_000  # 3 MB; quadratic in the parser
STOP_WITHIN_S = 5.0


def _write_dump(path: Path) -> tuple[list[str], list[str]]:
    """The dump; the ids of its good pages before and after the hostile one."""
    usable = {r["id"] for r in wikitext_records()}
    pages = [p for p in dump_pages() if str(p.pageid) in usable][: BEFORE + AFTER]
    deep = _page("990001", "Deep", "Prose.").replace(
        b"<revision>", b"<a>" * DEEP + b"</a>" * DEEP + b"<revision>"
    )
    body = [f'<mediawiki xmlns="{EXPORT_NS}">\n'.encode(), deep]
    body += [_page(str(p.pageid), p.title, p.wikitext) for p in pages[:BEFORE]]
    body.append(_page("990002", "Hostile", HOSTILE))
    body += [_page(str(p.pageid), p.title, p.wikitext) for p in pages[BEFORE:]]
    path.write_bytes(bz2.compress(b"".join([*body, b"</mediawiki>\n"])))
    ids = [str(p.pageid) for p in pages]
    return ids[:BEFORE], ids[BEFORE:]


def _cleaner_seconds(scraper: int) -> float:
    """CPU seconds of the scraper's cleaning child so far (0 before it has one)."""
    try:
        children = Path(f"/proc/{scraper}/task/{scraper}/children").read_text().split()
    except OSError:
        return 0.0
    return sum(_cpu_seconds(int(pid)) or 0.0 for pid in children)


def test_sigterm_during_a_hostile_page_then_a_run_to_the_end(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    path = tmp_path / "hostile.xml.bz2"
    before, after = _write_dump(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLDA_")}
    env["PYTHONPATH"] = str(REPO)
    command = [*CLI, "scrape", "--source", f"dump:{path}", "--redis", redis_server.url]
    settings = fast_settings(redis_url=redis_server.url)
    client = connect(settings.store)

    process = subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
    try:
        # The good pages before it clean in milliseconds: a busy child is on the hostile page.
        assert wait_until(lambda: _cleaner_seconds(process.pid) > 1.0, poll=0.05)
        process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        _, stderr = process.communicate(timeout=60)
        took = time.monotonic() - signalled
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    assert took < STOP_WITHIN_S, took
    assert f"queueing the {BEFORE} articles before it" in stderr, stderr[-3000:]
    assert stream_ids(client, settings.queue.stream) == before
    queue = ArticleQueue(client, settings.part(QueueConfig))
    counters = queue.counters()
    assert counters.get("skipped:malformed_page") == 1
    assert "skipped:parse_timeout" not in counters  # not judged: left for the next run

    start = time.monotonic()
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    took = time.monotonic() - start
    assert done.returncode == 0, done.stderr[-3000:]
    assert stream_ids(client, settings.queue.stream) == before + after
    counters = queue.counters()
    assert counters["skipped:parse_timeout"] == 1 and counters["skipped:malformed_page"] == 1
    ceiling = f"the parser ran past its bound of {PARSE_SECONDS_MAX:.1f} s"
    assert ceiling in done.stderr  # by its size, 62 s
    assert took < 120, took  # the ceiling's 10 s of CPU, on a busy machine
