"""Seeds in Redis that are not seeds are skipped, never handed to the learner: a real worker
with a real Redis keeps learning past them, at start and when an operator's change brings them,
with the good seeds beside them in effect."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import redis

from service.ingest.queue import ArticleQueue, QueueConfig
from service.keys import CONTROL_KEY, TOPIC_SEEDS_KEY
from service.learn.worker import Worker
from service.settings import Settings
from service.store.redis_client import connect
from service.store.topic_seeds import SEQ_FIELD, TopicSeeds, read_topic_seeds
from tests.service.learn.helpers import articles, drained, run_until, worker_settings
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow  # a real Redis, a worker in this process

GOOD = TopicSeeds(("film",), 3.0)
BAD_AT_START = {
    "1": json.dumps({"words": ["music"], "strength": 1e-320}),  # pseudo-counts round to 0
    "2": '{"words": ["music"], "strength": NaN}',
    "3": json.dumps({"words": ["x" * 10_000_000], "strength": 2.0}),  # forced into the vocabulary
    "4": "[" * 100_000 + "]" * 100_000,
}
BAD_LATER = {
    "5": json.dumps({"words": "music", "strength": True}),
    "-1": GOOD.to_json(),
}


def _queue(settings: Settings, start: int, count: int) -> None:
    queue = ArticleQueue(connect(settings.store), settings.part(QueueConfig))
    queue.ensure_group()
    assert queue.add(articles(start, count)).queued == count


def _write(client: redis.Redis, entries: Mapping[str, str]) -> None:
    mapping: dict[Any, Any] = dict(entries)  # redis-py's types want bytes | str | int | float
    client.hset(TOPIC_SEEDS_KEY, mapping=mapping)
    client.hincrby(CONTROL_KEY, SEQ_FIELD, 1)


def test_bad_seeds_in_redis_are_skipped_and_the_worker_keeps_learning(
    redis_server: RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = worker_settings(redis_server.url, tmp_path / "data")
    client = connect(settings.store)
    client.flushdb()
    _write(client, {"0": GOOD.to_json(), **BAD_AT_START})
    _queue(settings, 0, 60)
    changed = threading.Event()

    def learned_past_a_change(worker: Worker) -> bool:
        model = worker.model
        if model is None or model.docs_seen < 30:
            return False
        if not changed.is_set():  # an operator's change brings more bad entries
            changed.set()
            _write(client, BAD_LATER)
            _queue(settings, 60, 60)
        return drained(client) and worker.seeds.seq == read_topic_seeds(client)[0]

    with caplog.at_level(logging.WARNING, logger="service.store.topic_seeds"):
        worker = run_until(settings, learned_past_a_change)
    # It learned the articles queued after the change (in whole minibatches).
    assert worker.model is not None and worker.model.docs_seen > 60
    assert worker.seeds.topics == {0: GOOD}
    vocab = worker.session.vocabulary
    assert vocab is not None and all(len(word) <= 100 for word in vocab.words)
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    for topic in [*BAD_AT_START, *BAD_LATER]:
        assert any(f"seeds of topic b'{topic}'" in m for m in skipped), (topic, skipped)
