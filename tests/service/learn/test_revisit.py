"""Learning while quiet: with the stream empty the worker revisits the articles it learned, as
many per fresh one as the setting allows, then idles; held-out articles are never revisited,
fresh ones always go first, and the reservoir outlives a restart."""

from __future__ import annotations

import threading
import zlib
from dataclasses import replace
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.ingest.queue import ArticleQueue, QueueConfig
from service.keys import reservoir_key
from service.learn.command import build_worker
from service.learn.heldout_store import HeldoutStore
from service.learn.model_store import CHECKPOINT_NAME, load_model
from service.settings import Settings
from service.store.redis_client import connect
from service.store.snapshot import read_snapshot
from tests.service.learn.guards import revisited_up_to_the_ratio
from tests.service.learn.helpers import (
    HELDOUT,
    WorkerProcess,
    articles,
    docs_seen,
    drained,
    queue_articles,
    started,
    stopped,
    wait_until,
    worker_settings,
)
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow  # a real Redis, a worker in this process

RATIO = 2.0


def revisiting(redis_url: str, data_dir: Path) -> Settings:
    return worker_settings(
        redis_url, data_dir, revisit=True, revisit_ratio=RATIO, checkpoint_idle_s=0.5
    )


def held_texts(settings: Settings) -> list[str]:
    stored = connect(settings.store).hgetall(reservoir_key(0))
    return [zlib.decompress(blob).decode("utf-8") for blob in stored.values()]


def test_a_quiet_stream_is_revisited_up_to_the_ratio_then_idles(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = revisiting(redis_server.url, tmp_path / "data")
    client = connect(settings.store)
    queue_articles(client, 0, 120)
    worker, stop, thread = started(settings)
    try:

        def idle() -> bool:
            snap = read_snapshot(client)
            return drained(client) and snap is not None and snap.idle_since is not None

        wait_until(idle, "the worker to learn, revisit up to the ratio and go idle")
        trained = revisited_up_to_the_ratio(worker, client, settings, 120, RATIO)
        model = worker.model
        assert model is not None
        with TestClient(create_app(settings)) as api:
            assert api.app.state.view.wait_fresh(10)  # type: ignore[attr-defined]
            stats = api.get("/stats").json()
            assert stats["worker_state"].startswith("idle, queue empty since ")
            assert stats["reservoir_articles"] == trained
            assert stats["fresh_docs_per_s"] == stats["revisit_docs_per_s"] == 0
            metrics = api.get("/metrics").text
            assert f"streamlda_reservoir_articles {float(trained)}" in metrics
            assert "streamlda_revisit_docs_per_second 0.0" in metrics

        # Fresh articles are learned, and reopen the budget of revisits.
        revisited = model.revisited_docs
        queue_articles(client, 120, 30)
        wait_until(lambda: model.docs_seen > trained, "the fresh articles to be learned")
        wait_until(lambda: model.revisited_docs > revisited, "revisits to begin again")
    finally:
        stopped(stop, thread)

    # No held-out article was ever offered, so none is ever revisited.
    held = set(held_texts(settings))
    heldout = set(HeldoutStore(client, settings.queue.heldout_key).texts())
    assert len(heldout) == HELDOUT and not held & heldout
    assert held <= {a.text for a in articles(0, 150)}


def test_the_reservoir_outlives_a_restart(redis_server: RedisServer, tmp_path: Path) -> None:
    settings = revisiting(redis_server.url, tmp_path / "data")
    client = connect(settings.store)
    queue_articles(client, 0, 90)
    worker, stop, thread = started(settings)
    wait_until(lambda: drained(client), "the first articles to be learned")
    stopped(stop, thread)  # the final checkpoint writes the reservoir's slots first
    assert worker.revisits.reservoir is not None and worker.model is not None
    offered, revisited = worker.revisits.reservoir.offered, worker.model.revisited_docs
    _, _, extra = load_model(tmp_path / "data" / CHECKPOINT_NAME)
    assert extra["reservoir"]["offered"] == offered == worker.model.docs_seen
    assert len(held_texts(settings)) == offered

    again, stop, thread = started(settings)
    kept = again.revisits.reservoir
    assert kept is not None
    try:
        wait_until(lambda: again.model is not None, "the worker to resume")
        assert kept.offered == offered
        assert again.model is not None and again.model.revisited_docs >= revisited
        queue_articles(client, 90, 20)
        wait_until(lambda: drained(client), "the new articles to be learned")
        wait_until(lambda: kept.offered > offered, "offers")
    finally:
        stopped(stop, thread)
    assert len(held_texts(settings)) == kept.offered


def test_revisits_fill_the_gaps_of_a_paced_stream(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """Articles arriving a few at a time, each burst sooner than a read would wait: the worker
    revisits between them instead of waiting, and still learns every fresh one."""
    settings = revisiting(redis_server.url, tmp_path / "data").updated(read_block_ms=1000)
    client = connect(settings.store)
    queue_articles(client, 0, 70)  # the vocabulary's, the held-out set and a first minibatch
    worker, stop, thread = started(settings)
    try:
        wait_until(lambda: worker.model is not None and worker.model.docs_seen > 0, "a first step")
        model = worker.model
        assert model is not None
        for start in range(70, 130, 5):
            queue_articles(client, start, 5)
            threading.Event().wait(0.3)
        revisited_while_paced = model.revisited_docs
        wait_until(lambda: drained(client), "every fresh article to be learned")
        assert revisited_while_paced > 0
        assert model.docs_seen == 130 - HELDOUT - worker.counters["empty_docs"]
        # A minibatch fills in two bursts (0.6 s); revisits between them delay it by at most
        # the step in progress, milliseconds here.
        waits = worker.recent.wait_quantiles()
        assert waits is not None
        median, p95 = waits
        assert 0.0 <= median <= p95 <= 2.0, waits
    finally:
        stopped(stop, thread)


def held_slots(client: redis.Redis) -> dict[int, str]:
    """The reservoir's slots in Redis, slot by slot."""
    stored = client.hgetall(reservoir_key(0))
    return {int(s): zlib.decompress(blob).decode("utf-8") for s, blob in stored.items()}


def test_a_killed_worker_keeps_its_reservoir(redis_server: RedisServer, tmp_path: Path) -> None:
    """SIGKILL between checkpoints: the restarted process goes on from the checkpoint's count
    over the same slots in Redis and revisits from them; none of them is a held-out article."""
    client = redis_server.client()
    data_dir = tmp_path / "data"
    queue_articles(client, 0, 150)
    env = {
        "STREAMLDA_REVISIT": "true",
        "STREAMLDA_REVISIT_RATIO": str(RATIO),
        "STREAMLDA_CHECKPOINT_MAX_UNACKED": "50",  # on count only: the kill leaves some after
        "STREAMLDA_CHECKPOINT_EVERY_S": "600",
        "STREAMLDA_CHECKPOINT_IDLE_S": "600",
    }
    worker = WorkerProcess(redis_server.url, data_dir, tmp_path / "worker.log", **env)
    checkpoint = data_dir / CHECKPOINT_NAME
    try:
        wait_until(
            lambda: checkpoint.exists() and docs_seen(client) >= 60,
            "a checkpoint and 60 trained documents",
        )
        worker.kill()
    finally:
        worker.ensure_dead()
    _, _, extra = load_model(checkpoint)
    counted = extra["reservoir"]["offered"]
    kept_revisits = extra["reservoir"].get("revisited", 0)
    before = held_slots(client)
    assert counted > 0 and set(range(counted)) <= set(before)  # flushed before the checkpoint
    heldout = set(HeldoutStore(client, Settings().queue.heldout_key).texts())
    assert len(heldout) == HELDOUT and not set(before.values()) & heldout

    env["STREAMLDA_CHECKPOINT_IDLE_S"] = "0.5"
    restarted = WorkerProcess(redis_server.url, data_dir, tmp_path / "worker.log", **env)
    try:
        # New articles reopen the budget of revisits, whatever the checkpoint had used of it.
        queue_articles(client, 150, 30)
        wait_until(lambda: drained(client), "the stream drained after the restart")

        def revisiting_again() -> bool:  # revisits past those the checkpoint counted
            snap = read_snapshot(client)
            if snap is None:
                return False
            return snap.reservoir_passes * snap.reservoir_articles > kept_revisits + 0.5

        wait_until(revisiting_again, "revisits from the kept reservoir")
        assert restarted.terminate() == 0
    finally:
        restarted.ensure_dead()
    assert "resumed from" in restarted.output()
    model, _, extra = load_model(checkpoint)
    after = held_slots(client)
    # The slots the checkpoint counted are the same articles; the restart offered the rest.
    assert all(after[s] == before[s] for s in range(counted))
    assert extra["reservoir"]["offered"] == model.docs_seen and len(after) >= model.docs_seen
    assert model.revisited_docs > 0 and not set(after.values()) & heldout


def test_a_backlog_is_read_through_before_any_revisit(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    """A minibatch left short by a backlog's empty articles does not mean the stream is quiet:
    the worker reads on, and revisits only once a read finds nothing more unread."""
    settings = revisiting(redis_server.url, tmp_path / "data")
    client = connect(settings.store)
    queue_articles(client, 0, 120)
    worker = build_worker(settings, client, threading.Event())
    worker._start()
    for _ in range(1000):  # learn the first articles and revisit them up to the ratio
        worker.step()
        model = worker.model
        if model is not None and model.docs_seen and not worker.revisits.may_revisit(worker.model):
            break
    model = worker.model
    assert model is not None and not worker.revisits.may_revisit(worker.model)
    seen, revisited = model.docs_seen, model.revisited_docs
    # A backlog in which every third article has no vocabulary word: each full read leaves
    # the minibatch short.
    backlog = [
        replace(article, text="qqxz zzqx") if i % 3 == 2 else article
        for i, article in enumerate(articles(120, 300))
    ]
    queue = ArticleQueue(client, settings.part(QueueConfig))
    assert queue.add(backlog).queued == len(backlog)
    empty = worker.counters["empty_docs"]
    placed = 0
    for _ in range(1000):
        worker.step()
        placed = model.docs_seen - seen + worker.counters["empty_docs"] - empty
        if placed + len(worker.session.buffer) == len(backlog):
            break
        assert model.revisited_docs == revisited, f"a revisit with {placed} placed"
    assert placed + len(worker.session.buffer) == len(backlog)
    for _ in range(20):  # the stream now quiet: revisits resume
        worker.step()
    assert model.revisited_docs > revisited
    worker._shutdown()
