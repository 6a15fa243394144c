"""Two worker ranks under torchrun on a real Redis: every article trained once, nothing lost."""

from __future__ import annotations

import os
import signal
import zlib
from pathlib import Path

import pytest
import redis

from service.ingest.queue import ArticleQueue, QueueConfig
from service.keys import reservoir_key
from service.learn.heldout_store import HeldoutStore
from service.learn.model_store import CHECKPOINT_NAME, load_model
from service.settings import Settings
from service.store.snapshot import read_snapshot
from tests.service.learn.helpers import (
    HELDOUT,
    WorkerProcess,
    checkpoint_docs,
    docs_seen,
    drained,
    queue_articles,
    wait_until,
)
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

ARTICLES = 150


def _expected_trained(data_dir: Path, count: int = ARTICLES) -> int:
    """The articles past the held-out set that have a vocabulary word (the rest are skipped)."""
    from tests.service.learn.helpers import articles

    _, vocab, _ = load_model(data_dir / CHECKPOINT_NAME)
    encoded = [vocab.encode(a.text) for a in articles(0, count)]
    return sum(1 for ids in encoded if ids) - HELDOUT


def test_two_ranks_train_every_article_once_and_acknowledge_it(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    data_dir = tmp_path / "data"
    queue_articles(client, 0, ARTICLES)
    group = WorkerProcess(redis_server.url, data_dir, tmp_path / "group.log", ranks=2)
    try:
        wait_until(
            lambda: drained(client) and docs_seen(client) > 0, "the two ranks to drain the stream"
        )
        _stop(group)
    finally:
        group.ensure_dead()
    snapshot = read_snapshot(client)
    assert snapshot is not None and snapshot.world_size == 2
    expected = _expected_trained(data_dir)
    assert snapshot.docs_seen == checkpoint_docs(data_dir) == expected
    consumers = client.xinfo_consumers(Settings().queue.stream, Settings().queue.group)
    names = {c["name"].decode() if isinstance(c["name"], bytes) else c["name"] for c in consumers}
    assert {"worker-0", "worker-1"} <= names, names
    assert ArticleQueue(client, Settings().part(QueueConfig)).pending() == 0


def test_a_killed_rank_restarts_the_group_from_the_checkpoint_and_nothing_is_lost(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    data_dir = tmp_path / "data"
    queue_articles(client, 0, ARTICLES)
    log = tmp_path / "group.log"
    group = WorkerProcess(
        redis_server.url,
        data_dir,
        log,
        ranks=2,
        STREAMLDA_CHECKPOINT_EVERY_S="0.5",
        STREAMLDA_BATCH_SIZE="5",
    )
    try:
        wait_until(
            lambda: (data_dir / CHECKPOINT_NAME).exists() and docs_seen(client) >= 40,
            "a checkpoint and 40 trained documents",
        )
        floor = checkpoint_docs(data_dir)
        os.kill(_rank_pid(log, 1), signal.SIGKILL)
        queue_articles(client, ARTICLES, 50)  # work for the restarted group
        seen: list[int] = []

        def progress() -> bool:
            snap = read_snapshot(client)
            if snap is not None:
                seen.append(snap.docs_seen)
            return (
                drained(client)
                and snap is not None
                and log.read_text().count("rank 1 of 2 joined") >= 2
            )

        wait_until(progress, "the group to restart and drain the stream", timeout=120)
        _stop(group)
    finally:
        group.ensure_dead()
    assert min(seen) >= floor, f"docs_seen fell below the checkpoint's {floor}"
    assert checkpoint_docs(data_dir) == _expected_trained(data_dir, ARTICLES + 50)


def _stop(group: WorkerProcess) -> None:
    """SIGTERM torchrun: it passes the signal on, the group checkpoints, both ranks stop
    cleanly, then torchrun exits 1 (its SignalException); the ranks' words are the test."""
    code = group.terminate()
    tail = group.output()[-3000:]
    assert code in (0, 1), tail
    assert group.output().count("worker stopped") >= 2, tail
    assert "checkpoint (stop)" in group.output(), tail


def _rank_pid(log: Path, rank: int) -> int:
    """The pid the given rank logged when it started."""
    for line in reversed(log.read_text().splitlines()):
        if f"rank {rank} of 2 joined" in line and "pid" in line:
            return int(line.rsplit("pid ", 1)[1].split(")")[0])
    raise AssertionError(f"rank {rank} never logged its pid")


def _held(client: redis.Redis, rank: int) -> set[str]:
    """The texts rank ``rank``'s reservoir holds in Redis."""
    stored = client.hgetall(reservoir_key(rank))
    return {zlib.decompress(blob).decode("utf-8") for blob in stored.values()}


def test_a_quiet_group_revisits_together_and_each_rank_keeps_its_reservoir(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """Two ranks revisit up to the ratio from their own reservoirs, then idle; the checkpoint
    keeps each rank's reservoir, and the restarted group goes on from both."""
    client = redis_server.client()
    data_dir = tmp_path / "data"
    log = tmp_path / "group.log"
    queue_articles(client, 0, ARTICLES)
    env = {
        "STREAMLDA_REVISIT": "true",
        "STREAMLDA_REVISIT_RATIO": "2",
        "STREAMLDA_CHECKPOINT_IDLE_S": "0.5",
    }

    def idle() -> bool:
        snap = read_snapshot(client)
        return drained(client) and snap is not None and snap.idle_since is not None

    group = WorkerProcess(redis_server.url, data_dir, log, ranks=2, **env)
    try:
        wait_until(idle, "the group to learn, revisit up to the ratio and idle", timeout=120)
        _stop(group)
    finally:
        group.ensure_dead()
    model, _, extra = load_model(data_dir / CHECKPOINT_NAME)
    trained = model.docs_seen
    assert trained == _expected_trained(data_dir)
    assert 2 * trained <= model.revisited_docs < 2 * trained + 2 * 10  # one group minibatch
    states = extra["reservoirs"]
    assert len(states) == 2 and sum(s["offered"] for s in states) == trained
    heldout = set(HeldoutStore(client, Settings().queue.heldout_key).texts())
    held = [_held(client, rank) for rank in (0, 1)]
    assert [len(h) for h in held] == [s["offered"] for s in states]
    assert not (held[0] | held[1]) & heldout and not held[0] & held[1]

    queue_articles(client, ARTICLES, 40)
    again = WorkerProcess(redis_server.url, data_dir, log, ranks=2, **env)
    try:
        wait_until(idle, "the restarted group to learn the new articles and idle", timeout=120)
        _stop(again)
    finally:
        again.ensure_dead()
    model, _, extra = load_model(data_dir / CHECKPOINT_NAME)
    after = extra["reservoirs"]
    # Each rank counted on from its own state: none started its reservoir over.
    assert all(a["offered"] >= s["offered"] for a, s in zip(after, states, strict=True))
    assert sum(a["offered"] for a in after) == model.docs_seen > trained
    assert model.revisited_docs >= 2 * model.docs_seen


def test_a_group_changes_its_vocabulary_together_and_loses_nothing(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    from dataclasses import replace

    from service.store.published_model import read_model
    from tests.service.learn.helpers import articles

    client = redis_server.client()
    queue = ArticleQueue(client, Settings().part(QueueConfig))
    queue.ensure_group()
    stream = articles(0, ARTICLES)
    later = [replace(a, text=a.text + " José visited Łódź and Kraków.") for a in stream[100:]]
    assert queue.add(stream[:100] + later).queued == ARTICLES
    group = WorkerProcess(
        redis_server.url,
        tmp_path / "data",
        tmp_path / "group.log",
        ranks=2,
        STREAMLDA_VOCAB_REFRESH="30",
        STREAMLDA_VOCAB_COUNTED="100000",
    )
    try:
        wait_until(
            lambda: drained(client) and docs_seen(client) > 0, "the two ranks to drain the stream"
        )
        _stop(group)
    finally:
        group.ensure_dead()
    snapshot, model = read_snapshot(client), read_model(client)
    assert snapshot is not None and model is not None and snapshot.world_size == 2
    assert snapshot.counters["vocab_refreshes"] >= 1
    assert model.vocab_version == snapshot.counters["vocab_refreshes"]
    assert {"josé", "łódź", "kraków"} <= set(model.vocab)
    assert ArticleQueue(client, Settings().part(QueueConfig)).pending() == 0
