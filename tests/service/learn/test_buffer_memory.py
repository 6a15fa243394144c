"""What the worker keeps of a document between reading and training: its entry id and word ids,
not its article. The vocabulary's documents are all read before the first step (30,000 at the
service's defaults, 320 MB of text); their texts are not needed once they are encoded."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from service.ingest.sources import Article
from service.learn.command import build_worker
from service.learn.heldout_store import HeldoutStore
from tests.service.learn.helpers import (
    HELDOUT,
    drained,
    queue_articles,
    wait_until,
    worker_settings,
)
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow


def _holds_an_article(value: Any) -> bool:
    if isinstance(value, Article):
        return True
    return isinstance(value, tuple | list) and any(_holds_an_article(v) for v in value)


def test_buffered_documents_hold_no_article_text(redis_server: RedisServer, tmp_path: Path):
    client = redis_server.client()
    queue_articles(client, 0, 120)
    settings = worker_settings(redis_server.url, tmp_path / "data", vocab_docs=100)
    stop, gate, stepping = threading.Event(), threading.Event(), threading.Event()
    worker = build_worker(settings, client, stop)
    learn = worker.session.learn

    def held_at_the_first_step(*args: Any, **kwargs: Any) -> None:
        stepping.set()
        gate.wait(60)
        learn(*args, **kwargs)

    worker.session.learn = held_at_the_first_step  # type: ignore[method-assign]
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        wait_until(stepping.is_set, "the first step")
        buffered = list(worker.session.buffer)
        assert len(buffered) > 50  # the vocabulary's documents, encoded, wait for their steps
        assert not any(_holds_an_article(item) for item, _ids in buffered)
        gate.set()
        wait_until(lambda: drained(client), "the stream to be learned and acknowledged")
    finally:
        gate.set()
        stop.set()
        thread.join(60)
    assert not thread.is_alive()
    model = worker.model
    assert model is not None
    assert model.docs_seen + worker.counters["empty_docs"] + HELDOUT == 120
    stored = HeldoutStore(client, settings.queue.heldout_key).texts()
    assert len(stored) == HELDOUT and all(stored)
