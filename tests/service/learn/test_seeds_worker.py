"""Seeds with a real worker and Redis: a seeds file's pending word enters with a vocabulary
refresh and takes effect on its topic; the seeds stay on that topic number, in effect, after a
restart; an operator's change reaches the worker at its next step."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from service.ingest.queue import ArticleQueue, QueueConfig
from service.learn.worker import Worker
from service.settings import Settings
from service.store.redis_client import connect
from service.store.snapshot import read_snapshot
from service.store.topic_seeds import TopicSeeds, read_topic_seeds, set_topic_seeds
from tests.service.learn.helpers import articles, drained, run_until, worker_settings
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow  # a real Redis, a worker in this process

COUNT = 150
NEW_FROM = 100  # the articles from here on name a city the first ones did not
TOPIC = 2


def _queue(settings: Settings, start: int, count: int) -> None:
    queue = ArticleQueue(connect(settings.store), settings.part(QueueConfig))
    queue.ensure_group()
    stream = articles(start, count)
    later = [replace(a, text=a.text + " Kraków.") if start + i >= NEW_FROM else a
             for i, a in enumerate(stream)]  # fmt: skip
    assert queue.add(later).queued == count


def _in_effect(worker: Worker, word: str) -> bool:
    model, vocab = worker.model, worker.session.vocabulary
    if model is None or vocab is None or word not in vocab.index:
        return False
    return (TOPIC, vocab.index[word]) in {(k, w) for k, w, _ in model.seeds.triples()}


def test_seeds_enter_with_a_refresh_and_stay_on_their_topic_across_a_restart(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    seeds_file = tmp_path / "seeds.json"
    seeds_file.write_text(json.dumps({str(TOPIC): ["Kraków", "the"]}))
    settings = worker_settings(
        redis_server.url,
        tmp_path / "data",
        vocab_refresh=40,
        vocab_counted=100_000,
        seeds=seeds_file,
        seed_strength=3.0,
    )
    client = connect(settings.store)
    _queue(settings, 0, COUNT)

    def refreshed(worker: Worker) -> bool:
        snap = read_snapshot(client)
        return drained(client) and snap is not None and snap.counters["vocab_refreshes"] >= 1

    worker = run_until(settings, refreshed)
    assert _in_effect(worker, "kraków")  # pending at first: the refresh brought it in
    assert worker.seeds.topics == {TOPIC: TopicSeeds(("kraków", "the"), 3.0)}
    snap = read_snapshot(client)
    assert snap is not None and snap.topic_seeds is not None
    assert snap.topic_seeds[TOPIC] == ["kraków", "the"]
    assert read_topic_seeds(client)[1] == worker.seeds.topics

    # A restart without the file: the checkpoint and Redis keep them, on the same topic.
    again = worker_settings(
        redis_server.url, tmp_path / "data", vocab_refresh=40, vocab_counted=100_000
    )
    resumed = run_until(again, lambda w: w.model is not None and _in_effect(w, "kraków"))
    assert resumed.seeds.topics == {TOPIC: TopicSeeds(("kraków", "the"), 3.0)}

    # An operator's change is read at the worker's next step.
    set_topic_seeds(client, 4, TopicSeeds(("kraków",), 5.0))
    _queue(again, COUNT, 20)

    def changed(w: Worker) -> bool:
        model, vocab = w.model, w.session.vocabulary
        if model is None or vocab is None:
            return False
        word = vocab.index.get("kraków")
        return any((k, w) == (4, word) for k, w, _ in model.seeds.triples())

    changed_worker = run_until(again, changed)
    assert set(changed_worker.seeds.topics) == {TOPIC, 4}
