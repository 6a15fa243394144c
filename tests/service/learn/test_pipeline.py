"""Scraper and worker as real processes on a real Redis: the pipeline runs as fast as the worker
reads, whatever the checkpoint interval, and bounds what it holds unacknowledged."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import redis

from service.ingest.queue import ArticleQueue, QueueConfig
from service.settings import Settings
from service.store.snapshot import read_snapshot
from tests.service.learn.helpers import (
    DEADLINE_S,
    HELDOUT,
    REPO,
    VOCAB_DOCS,
    WorkerProcess,
    docs_seen,
    drained,
    queue_articles,
    wait_until,
)
from tests.support.corpora import SHARDS
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

HIGH_WATER = 10  # below VOCAB_DOCS: the setting that used to deadlock
ARTICLES = 150
NEVER = "600"  # checkpoint_every_s longer than any test: only other triggers checkpoint


class Sampler:
    """Samples (unread, pending, stream length) of the queue in a thread until stopped."""

    def __init__(self, client: redis.Redis) -> None:
        self.queue = ArticleQueue(client, Settings().part(QueueConfig))
        self.samples: list[tuple[int, int, int]] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(0.01):
            pipe = self.queue.client.pipeline(transaction=True)
            pipe.xlen(self.queue.stream)
            pipe.xpending(self.queue.stream, self.queue.group)
            length, summary = pipe.execute(raise_on_error=False)
            if isinstance(summary, Exception):
                continue  # no group yet
            pending = int(summary["pending"])
            self.samples.append((int(length) - pending, pending, int(length)))

    def stop(self) -> None:
        self.done.set()
        self.thread.join()


def scraper(redis_url: str, log: Path) -> subprocess.Popen[bytes]:
    """``streamlda scrape`` of the first ARTICLES articles of shard 0 at HIGH_WATER."""
    command = [
        sys.executable,
        "-m",
        "service.cli",
        "scrape",
        "--source",
        f"jsonl:{SHARDS[0]}",
        "--redis",
        redis_url,
        "--limit",
        str(ARTICLES),
        "--high-water",
        str(HIGH_WATER),
    ]
    env = {**os.environ, "STREAMLDA_BACKPRESSURE_POLL": "0.05"}
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


def learned(client: redis.Redis) -> int:
    """Articles the worker is done with: trained, held out, or empty in its vocabulary."""
    snap = read_snapshot(client)
    return -1 if snap is None else snap.docs_seen + HELDOUT + snap.counters["empty_docs"]


def test_vocabulary_above_the_mark_and_rare_checkpoints_neither_deadlock_nor_throttle(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    sampler = Sampler(client)
    worker = WorkerProcess(
        redis_server.url,
        tmp_path / "data",
        tmp_path / "worker.log",
        STREAMLDA_STREAM_HIGH_WATER=str(HIGH_WATER),
        STREAMLDA_CHECKPOINT_EVERY_S=NEVER,
        STREAMLDA_CHECKPOINT_MAX_UNACKED="1000",
    )
    scrape = scraper(redis_server.url, tmp_path / "scraper.log")
    try:
        # The scraper queues everything although nothing but the vocabulary is checkpointed
        # and acknowledged meanwhile: it waits on reading, not on checkpoints.
        assert scrape.wait(timeout=DEADLINE_S) == 0, (tmp_path / "scraper.log").read_text()
        wait_until(lambda: drained(client), "the source's tail acknowledged")
        wait_until(lambda: learned(client) == ARTICLES, "every article learned")
        assert worker.terminate() == 0
    finally:
        sampler.stop()
        worker.ensure_dead()
        if scrape.poll() is None:
            scrape.kill()
    output = worker.output()
    assert "checkpoint (periodic)" not in output and "checkpoint (drained)" in output
    assert max(unread for unread, _, _ in sampler.samples) <= HIGH_WATER
    assert max(pending for _, pending, _ in sampler.samples) > HIGH_WATER
    snap = read_snapshot(client)
    assert snap is not None
    # Exactly once: each queued article trained, held out or empty, none twice.
    assert snap.docs_seen + HELDOUT + snap.counters["empty_docs"] == ARTICLES
    assert int(client.hget(Settings().queue.counters_key, "queued") or 0) == ARTICLES


def test_unacknowledged_entries_are_bounded_by_checkpoints_on_count(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    queue_articles(client, 0, ARTICLES)
    bound, batch = 20, 10
    sampler = Sampler(client)
    worker = WorkerProcess(
        redis_server.url,
        tmp_path / "data",
        tmp_path / "worker.log",
        STREAMLDA_CHECKPOINT_EVERY_S=NEVER,
        STREAMLDA_CHECKPOINT_MAX_UNACKED=str(bound),
    )
    try:
        wait_until(lambda: learned(client) == ARTICLES and drained(client), "every article")
        assert worker.terminate() == 0
    finally:
        sampler.stop()
        worker.ensure_dead()
    trained = docs_seen(client)
    snap = read_snapshot(client)
    assert snap is not None and snap.counters["checkpoints"] >= trained // (bound + batch)
    # Held: the vocabulary's documents, then fewer than the bound plus two minibatches.
    assert max(pending for _, pending, _ in sampler.samples) <= max(VOCAB_DOCS, bound + 2 * batch)
