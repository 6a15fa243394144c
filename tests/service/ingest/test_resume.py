"""A restarted scraper resumes its file where the last one stopped: after SIGKILL, with two
scrapers on one file, on a changed file, and across a Redis restart from its AOF."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.ingest.command import scraper_config
from service.ingest.queue import ArticleQueue, QueueConfig
from service.ingest.scraper import Scraper, Totals
from service.ingest.sources import FileSource, Position, open_source
from service.settings import Settings
from service.store.redis_client import connect
from tests.service.ingest.helpers import fast_settings, stream_ids, wait_until
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-c", "import sys; from service.cli import main; sys.exit(main())"]
# How soon a restarted scraper must queue its next new article.
RESUME_BOUND_S = 5.0
HIGH_WATER = 1_000_000


def _write(path: Path, ids: range, tag: str = "") -> list[str]:
    """A JSON-lines file of one short article per id; the ids, in order."""
    with path.open("w") as out:
        for i in ids:
            text = f"Article {tag}{i} is about the subject number {i} and its history."
            out.write(json.dumps({"id": f"{tag}{i}", "title": f"T{tag}{i}", "text": text}) + "\n")
    return [f"{tag}{i}" for i in ids]


def _settings(server: RedisServer, **overrides: object) -> Settings:
    return fast_settings(redis_url=server.url, **overrides)


def _queue(server: RedisServer) -> ArticleQueue:
    settings = _settings(server)
    return ArticleQueue(connect(settings.store), settings.part(QueueConfig))


def _identity(path: Path) -> str:
    source = open_source(f"jsonl:{path}")
    assert isinstance(source, FileSource)
    return source.identity()


def _scrape(server: RedisServer, path: Path, limit: int | None = None) -> Totals:
    settings = _settings(server, articles_per_request=20)
    source = open_source(f"jsonl:{path}")
    return Scraper(
        scraper_config(settings), source, client=connect(settings.store), limit=limit
    ).run()


class ScraperProcess:
    """``streamlda scrape`` on a file, as a real process logging to a file."""

    def __init__(self, server: RedisServer, path: Path, log: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLDA_")}
        env["PYTHONPATH"] = str(REPO)
        self.log = log
        source, high_water = f"jsonl:{path}", str(HIGH_WATER)  # no worker reads: no backpressure
        with log.open("a") as out:
            self.process = subprocess.Popen(
                [
                    *CLI,
                    "scrape",
                    "--source",
                    source,
                    "--redis",
                    server.url,
                    "--high-water",
                    high_water,
                ],
                stdout=subprocess.DEVNULL,
                stderr=out,
                cwd=REPO,
                env=env,
            )

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def finish(self, timeout: float = 120) -> str:
        """Wait for the end of the file; the log."""
        assert self.process.wait(timeout=timeout) == 0, self.log.read_text()[-3000:]
        return self.log.read_text()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture
def processes() -> Iterator[list[ScraperProcess]]:
    """Every scraper process a test starts ends with it."""
    started: list[ScraperProcess] = []
    yield started
    for process in started:
        process.stop()


def _done_counts(log: str) -> Counter[str]:
    """The counts of a scraper's "done:" line."""
    line = log.rsplit("done: ", 1)[1].split("\n", 1)[0]
    counts: Counter[str] = Counter()
    for part in line.split(", "):
        number, _, name = part.partition(" ")
        if number.isdigit():
            counts[name.split(" ")[0]] = int(number)
    return counts


def test_a_killed_scraper_resumes_far_into_its_file_within_seconds(
    redis_server: RedisServer, tmp_path: Path, processes: list[ScraperProcess]
) -> None:
    path = tmp_path / "articles.jsonl"
    ids = _write(path, range(1, 100_001))
    queue = _queue(redis_server)
    identity = _identity(path)

    def reached() -> int:
        position = queue.position(identity)
        return 0 if position is None else position.count

    began = time.monotonic()
    first = ScraperProcess(redis_server, path, tmp_path / "first.log")
    processes.append(first)
    assert wait_until(lambda: reached() >= 70_000, timeout=120), reached()
    reach_s = time.monotonic() - began  # what reading that far again would cost, about
    first.kill()
    killed_at = reached()
    queued = queue.length()
    assert queued == killed_at  # the position and the stream moved together, batch by batch

    started = time.monotonic()
    second = ScraperProcess(redis_server, path, tmp_path / "second.log")
    processes.append(second)
    assert wait_until(lambda: queue.length() > queued, timeout=30, poll=0.005)
    resumed_in = time.monotonic() - started
    log = second.finish()
    print(
        f"killed after {killed_at} lines, reached in {reach_s:.2f} s; "
        f"next new article queued {resumed_in:.2f} s after the restart"
    )
    # Within the bound, and far sooner than reading the file again would take on this machine.
    assert resumed_in < min(RESUME_BOUND_S, reach_s / 3), (resumed_in, reach_s)
    assert f"resuming after {killed_at} lines" in log
    done = _done_counts(log)
    assert done["fetched"] == done["queued"] == len(ids) - killed_at  # nothing read twice
    assert done["duplicates"] == done["re-reads"] == 0
    assert stream_ids(redis_server.client(), queue.stream) == ids  # each once, in file order
    counters = queue.counters()
    assert counters.get("duplicates", 0) == 0 and counters.get("rereads", 0) == 0
    assert counters["queued"] == len(ids)  # the killed one's last batch too


def test_queued_is_exact_when_a_scraper_dies_before_it_publishes_its_counters(
    redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "articles.jsonl"
    ids = _write(path, range(1, 121))
    # As if each scraper were killed between queueing a batch and publishing its totals.
    monkeypatch.setattr(ArticleQueue, "publish_counters", lambda self, deltas: None)
    assert _scrape(redis_server, path, limit=70).counts["queued"] == 70
    copy = tmp_path / "copy.jsonl"
    _write(copy, range(1, 121))  # the same lines in another file: its first 70 are duplicates
    again = _scrape(redis_server, copy)
    assert (again.counts["queued"], again.counts["duplicates"]) == (50, 70)
    counters = _queue(redis_server).counters()
    assert counters == {"queued": len(ids), "duplicates": 70}  # nothing else was published


def test_two_scrapers_on_one_file_resume_losing_nothing_and_queueing_nothing_twice(
    redis_server: RedisServer, tmp_path: Path, processes: list[ScraperProcess]
) -> None:
    path = tmp_path / "articles.jsonl"
    ids = _write(path, range(1, 30_001))
    queue = _queue(redis_server)
    identity = _identity(path)
    both = [ScraperProcess(redis_server, path, tmp_path / f"{n}.log") for n in ("a", "b")]
    processes.extend(both)
    assert wait_until(lambda: (queue.position(identity) or Position()).count >= 10_000, 120)
    both[0].kill()
    restarted = ScraperProcess(redis_server, path, tmp_path / "a.log")
    processes.append(restarted)
    logs = [restarted.finish(), both[1].finish()]
    assert stream_ids(redis_server.client(), queue.stream) == ids  # all, each once, in order
    assert queue.position(identity) == Position(
        offset=path.stat().st_size,
        count=len(ids),
        member_at=path.stat().st_size,
        member_offset=path.stat().st_size,
    )
    counters = queue.counters()
    # Each reads the whole file: what one queued the other reads again, a re-read.
    assert counters.get("duplicates", 0) == 0 and counters["rereads"] > 0
    assert all(_done_counts(log)["duplicates"] == 0 for log in logs)


def test_a_changed_or_different_file_does_not_inherit_a_position(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    path = tmp_path / "articles.jsonl"
    _write(path, range(1, 101))
    assert _scrape(redis_server, path, limit=60).counts["queued"] == 60
    queue = _queue(redis_server)
    assert (queue.position(_identity(path)) or Position()).count == 60
    # The same file again resumes; a copy of it is another file: read from its start, its
    # pages already queued are duplicates (not re-reads of that file).
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    again = _scrape(redis_server, copy)
    assert (again.counts["queued"], again.counts["duplicates"], again.counts["rereads"]) == (
        40,
        60,
        0,
    )
    # Rewritten in place, with other articles: read from the start, nothing skipped.
    new_ids = _write(path, range(1, 81), tag="new-")
    changed = _scrape(redis_server, path)
    assert changed.counts["queued"] == 80 and changed.counts["fetched"] == 80
    assert stream_ids(redis_server.client(), queue.stream)[-80:] == new_ids


@pytest.mark.parametrize("stop", ["stop", "kill"])
def test_the_position_survives_a_redis_restart_from_its_aof(
    redis_server: RedisServer, tmp_path: Path, stop: str
) -> None:
    path = tmp_path / "articles.jsonl"
    ids = _write(path, range(1, 201))
    _scrape(redis_server, path, limit=120)
    queue = _queue(redis_server)
    before = queue.position(_identity(path))
    assert before is not None and before.count == 120
    if stop == "stop":
        redis_server.stop()  # a clean shutdown writes the AOF out
    else:
        time.sleep(1.5)  # appendfsync everysec: what is a second old is on disk
        redis_server.kill()
    redis_server.start()
    assert queue.position(_identity(path)) == before
    after = _scrape(redis_server, path)
    assert (after.counts["fetched"], after.counts["queued"]) == (80, 80)
    assert after.counts["duplicates"] == after.counts["rereads"] == 0
    assert stream_ids(redis_server.client(), queue.stream) == ids


def test_a_crash_that_loses_recent_writes_loses_the_position_with_them(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """Position and seen ids are in one script's writes: whatever a crash keeps of the AOF, a
    restarted scraper queues every article once."""
    path = tmp_path / "articles.jsonl"
    ids = _write(path, range(1, 201))
    _scrape(redis_server, path, limit=120)
    redis_server.kill()  # no wait: the last second of writes may be gone
    redis_server.start()
    queue = _queue(redis_server)
    position = queue.position(_identity(path)) or Position()
    assert queue.length() == position.count
    _scrape(redis_server, path)
    assert stream_ids(redis_server.client(), queue.stream) == ids
