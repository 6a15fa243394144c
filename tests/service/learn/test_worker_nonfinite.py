"""A step that would make theta non-finite: the worker restores its checkpoint, counts, goes on."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lda.model import NonFiniteError, StreamingLDA
from service.keys import PERPLEXITY_KEY
from service.learn.checkpointer import Checkpointer
from service.learn.command import build_worker
from service.learn.publisher import Publisher
from service.store.published_model import read_model
from service.store.snapshot import read_snapshot
from tests.service.learn.helpers import (
    HELDOUT,
    checkpoint_docs,
    drained,
    queue_articles,
    wait_until,
    worker_settings,
)
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

FAILING_CALLS = {4, 7}  # the 4th and 7th minibatches would make theta non-finite


def test_nonfinite_step_restores_the_checkpoint_and_never_publishes_nan(
    redis_server: RedisServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = redis_server.client()
    queue_articles(client, 0, 120)
    real_update = StreamingLDA.update
    calls = [0]
    docs_before_failure: list[int] = []

    def update(self: StreamingLDA, batch: Any, *group: Any, **options: Any) -> Any:
        calls[0] += 1
        if calls[0] in FAILING_CALLS:
            docs_before_failure.append(self.docs_seen)
            raise NonFiniteError("injected non-finite theta")
        return real_update(self, batch, *group, **options)

    monkeypatch.setattr(StreamingLDA, "update", update)
    shown: list[tuple[int, int]] = []  # every snapshot's (docs_seen, restores)
    real_snapshot = Publisher.snapshot

    def snapshot(self: Publisher, model: StreamingLDA, *rest: Any) -> None:
        real_snapshot(self, model, *rest)
        shown.append((model.docs_seen, rest[-1].counters["nonfinite_restores"]))

    monkeypatch.setattr(Publisher, "snapshot", snapshot)
    restored_to: list[int] = []  # the documents of each checkpoint a restore went back to
    real_load = Checkpointer.load

    def load(self: Checkpointer) -> Any:
        loaded = real_load(self)
        restored_to.append(loaded[0].docs_seen)
        return loaded

    monkeypatch.setattr(Checkpointer, "load", load)
    # A long periodic interval: the restores go back to the vocabulary-time checkpoint (0 docs).
    settings = worker_settings(redis_server.url, tmp_path / "data", checkpoint_every_s=600.0)
    stop = threading.Event()
    worker = build_worker(settings, client, stop)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()

    def all_handled() -> bool:
        snap = read_snapshot(client)
        if snap is None:
            return False
        c = snap.counters
        return snap.docs_seen + c["dropped_docs"] + c["empty_docs"] + HELDOUT == 120

    try:
        wait_until(all_handled, "every article trained or dropped")
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert drained(client), "the final checkpoint acknowledged the rest"
    snap = read_snapshot(client)
    assert snap is not None
    assert snap.counters["nonfinite_restores"] == len(FAILING_CALLS)
    assert snap.counters["dropped_docs"] > 0
    trained_or_dropped = snap.docs_seen + snap.counters["dropped_docs"]
    assert trained_or_dropped + snap.counters["empty_docs"] + HELDOUT == 120
    assert checkpoint_docs(tmp_path / "data") == snap.docs_seen
    # Nothing non-finite anywhere the API reads; no point beyond a restored checkpoint survives.
    assert all(math.isfinite(w.weight) for topic in snap.topics for w in topic)
    points = [json.loads(m) for m in client.zrange(PERPLEXITY_KEY, 0, -1)]
    assert points and all(math.isfinite(p["perplexity"]) for p in points)
    assert max(p["docs_seen"] for p in points) <= snap.docs_seen
    model = read_model(client)
    assert model is not None and bool(np.isfinite(model.beta).all())
    assert docs_before_failure[0] > 0, "the failure happened mid-stream, after progress"
    # Each restore is shown at once: the restored model, before it learns on.
    assert len(restored_to) == len(FAILING_CALLS)
    for restores, docs in enumerate(restored_to, start=1):
        assert next(d for d, r in shown if r == restores) == docs, (restores, shown)
