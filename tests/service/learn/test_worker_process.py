"""The worker as a real process on a real Redis: crash, SIGTERM and Redis outages lose nothing."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import redis

from service.learn.model_store import CHECKPOINT_NAME
from service.store.perplexity import read_perplexity
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


def test_kill_9_then_restart_resumes_from_the_checkpoint_and_acknowledges_everything(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    data_dir = tmp_path / "data"
    queue_articles(client, 0, 150)
    # Checkpoints on count only: 130 entries after the 20 held out, so the checkpoints at 50 and
    # 100 leave the last 30 unacknowledged however fast the worker runs (on time, a checkpoint
    # could acknowledge everything before the kill).
    worker = WorkerProcess(
        redis_server.url,
        data_dir,
        tmp_path / "worker.log",
        STREAMLDA_CHECKPOINT_MAX_UNACKED="50",
        STREAMLDA_CHECKPOINT_EVERY_S="600",
        STREAMLDA_CHECKPOINT_IDLE_S="600",
    )
    try:
        wait_until(
            lambda: (data_dir / CHECKPOINT_NAME).exists() and docs_seen(client) >= 60,
            "a checkpoint and 60 trained documents",
        )
        worker.kill()
    finally:
        worker.ensure_dead()
    floor = checkpoint_docs(data_dir)
    assert not drained(client), "the crash left work behind (else the test proves nothing)"
    queue_articles(client, 150, 50)
    restarted = WorkerProcess(
        redis_server.url, data_dir, tmp_path / "worker.log", STREAMLDA_CHECKPOINT_EVERY_S="0.5"
    )
    try:
        seen: list[int] = []

        def progress() -> bool:
            snap = read_snapshot(client)
            if snap is not None:
                seen.append(snap.docs_seen)
            return drained(client) and snap is not None

        wait_until(progress, "the stream drained after the restart")
        assert restarted.terminate() == 0
    finally:
        restarted.ensure_dead()
    assert min(seen) >= floor, f"docs_seen fell below the checkpoint's {floor}"
    assert "resumed from" in restarted.output()
    snap = read_snapshot(client)
    assert snap is not None
    learned = snap.docs_seen + snap.counters["empty_docs"] + HELDOUT
    assert learned >= 200, "every article was learned from (redelivery allowed)"
    assert checkpoint_docs(data_dir) == snap.docs_seen


def test_sigterm_checkpoints_and_leaves_only_entries_that_are_redelivered(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    data_dir = tmp_path / "data"
    queue_articles(client, 0, 120)
    # No periodic checkpoint during the test: only SIGTERM's can acknowledge the trained entries.
    env = {"STREAMLDA_CHECKPOINT_EVERY_S": "600"}
    worker = WorkerProcess(redis_server.url, data_dir, tmp_path / "worker.log", **env)
    try:
        wait_until(lambda: docs_seen(client) >= 40, "40 trained documents")
        assert worker.terminate() == 0
    finally:
        worker.ensure_dead()
    stopped_at = checkpoint_docs(data_dir)
    assert stopped_at >= 40
    snap = read_snapshot(client)
    assert snap is not None and snap.docs_seen == stopped_at, "the checkpoint has the last update"
    restarted = WorkerProcess(redis_server.url, data_dir, tmp_path / "worker.log", **env)
    try:
        wait_until(
            lambda: docs_seen(client) + HELDOUT >= 120 - _empty(client),
            "every remaining article trained after the restart",
        )
        assert restarted.terminate() == 0
    finally:
        restarted.ensure_dead()
    assert drained(client)
    snap = read_snapshot(client)
    assert snap is not None
    # Exactly once: nothing lost (no entry left unacknowledged) and nothing trained twice.
    assert snap.docs_seen + HELDOUT + snap.counters.get("empty_docs", 0) == 120
    points = read_perplexity(client)
    assert len(points) >= 2 and all(math.isfinite(p.perplexity) for p in points)


def test_redis_outage_mid_run_is_waited_out(redis_server: RedisServer, tmp_path: Path) -> None:
    client = redis_server.client()
    data_dir = tmp_path / "data"
    queue_articles(client, 0, 80)
    worker = WorkerProcess(
        redis_server.url, data_dir, tmp_path / "worker.log", STREAMLDA_CHECKPOINT_EVERY_S="0.5"
    )
    try:
        wait_until(lambda: docs_seen(client) >= 30, "30 trained documents")
        redis_server.stop()
        wait_until(lambda: "Redis unavailable" in worker.output(), "the worker to notice")
        assert worker.process.poll() is None, "the worker must wait, not crash"
        redis_server.start()
        client = redis_server.client()
        queue_articles(client, 80, 40)
        wait_until(
            lambda: drained(client) and docs_seen(client) + HELDOUT + _empty(client) >= 120,
            "the stream drained after the outage",
        )
        assert worker.terminate() == 0
    finally:
        worker.ensure_dead()


def _empty(client: redis.Redis) -> int:
    snap = read_snapshot(client)
    return 0 if snap is None else snap.counters.get("empty_docs", 0)
