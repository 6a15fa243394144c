"""The worker is one loop built from parts: a rank that does not publish is the same loop
without the showing part, and the checkpoint's one rule decides for a worker and a group."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import pytest
import torch

from lda.model import StreamingLDA
from service.keys import HEARTBEAT_KEY, MODEL_KEY, SNAPSHOT_KEY
from service.learn.checkpointer import CheckpointConfig, Checkpointer
from service.learn.command import build_worker
from service.learn.showing import Showing
from service.store.redis_retry import RedisRetry, RetryConfig
from tests.service.learn.helpers import (
    HELDOUT,
    REPO,
    checkpoint_docs,
    drained,
    queue_articles,
    wait_until,
    worker_settings,
)
from tests.support.redis_server import RedisServer


def test_no_class_of_the_service_subclasses_the_worker() -> None:
    """A group's rank is the Worker with other parts, not a subclass overriding its loop."""
    subclasses = []
    for path in (REPO / "service").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
                if "Worker" in bases:
                    subclasses.append(f"{path.name}:{node.name}")
    assert subclasses == []


@pytest.mark.slow
def test_a_worker_without_its_showing_part_learns_checkpoints_and_publishes_nothing(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    queue_articles(client, 0, 90)
    settings = worker_settings(redis_server.url, tmp_path / "data", checkpoint_idle_s=0.5)
    stop = threading.Event()
    worker = build_worker(settings, client, stop)
    worker.parts.parts = [p for p in worker.parts.parts if not isinstance(p, Showing)]
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: drained(client), "the stream to be learned and acknowledged")
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive()
    model = worker.model
    assert model is not None and model.docs_seen > 0
    assert checkpoint_docs(tmp_path / "data") == model.docs_seen
    assert model.docs_seen + worker.counters["empty_docs"] + HELDOUT == 90
    assert client.exists(SNAPSHOT_KEY, HEARTBEAT_KEY, MODEL_KEY) == 0


@pytest.mark.slow
def test_the_one_checkpoint_rule(redis_server: RedisServer, tmp_path: Path) -> None:
    settings = worker_settings(redis_server.url, tmp_path / "data")
    config = CheckpointConfig(every_s=3600.0, max_unacked=100, stop_ack_wait_s=1.0)
    retry = RedisRetry(settings.part(RetryConfig), threading.Event())
    checkpointer = Checkpointer(
        tmp_path / "checkpoint.pt", torch.device("cpu"), config, settings, lambda ids: 0, retry
    )
    model = StreamingLDA(settings.model.learner_config(20), "cpu", 0)
    checkpointer.docs = model.docs_seen  # as if just written

    def due(**given: object) -> str | None:
        values: dict = {
            "requested": False,
            "paused": False,
            "waiting": 0,
            "buffered": 0,
            "idle": lambda: False,
        }
        values.update(given)
        return checkpointer.due(model, **values)

    assert checkpointer.due(None, requested=True, paused=True, waiting=500, buffered=0,
                            idle=lambda: True) is None  # fmt: skip
    assert due() is None
    assert due(requested=True, waiting=500) == "requested"
    assert due(paused=True, waiting=3) == "paused"
    assert due(paused=True, waiting=3, buffered=2) is None  # train what is in hand first
    assert due(waiting=100, buffered=5) == "unacked"
    assert due(waiting=3, buffered=0, idle=lambda: True) == "drained"
    assert due(waiting=3, buffered=1, idle=lambda: True) is None
    assert due(waiting=0, idle=lambda: True) is None  # nothing to acknowledge
    checkpointer.last = time.monotonic() - 3601
    assert due(waiting=1, buffered=5) == "periodic"
    assert due() is None  # nothing changed since the last checkpoint
