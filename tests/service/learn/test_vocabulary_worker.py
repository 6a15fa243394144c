"""The worker's vocabulary follows its stream: words the later articles bring enter the model
the API serves, scoring goes on in the new words, nothing is lost, and a restart keeps the
vocabulary and the counts."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest

from lda.vocab import Vocabulary
from service.ingest.queue import ArticleQueue, QueueConfig
from service.learn.command import build_worker
from service.learn.model_store import CHECKPOINT_NAME, load_model
from service.settings import Settings
from service.store.perplexity import read_perplexity
from service.store.published_model import read_model
from service.store.redis_client import connect
from service.store.snapshot import read_snapshot
from tests.service.learn.helpers import articles, drained, wait_until, worker_settings
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow  # a real Redis, a worker in this process

COUNT = 150
NEW_FROM = 100  # the articles from here on name places and people the first ones did not
NEW_WORDS = ("josé", "łódź", "kraków")


def _queue(settings: Settings) -> None:
    queue = ArticleQueue(connect(settings.store), settings.part(QueueConfig))
    queue.ensure_group()
    stream = articles(0, COUNT)
    later = [replace(a, text=a.text + " José visited Łódź and Kraków.") for a in stream[NEW_FROM:]]
    assert queue.add(stream[:NEW_FROM] + later).queued == COUNT


def _run(settings: Settings, done: object) -> None:
    client = connect(settings.store)
    stop = threading.Event()
    worker = build_worker(settings, client, stop)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        wait_until(done, "the worker to learn the stream")  # type: ignore[arg-type]
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive()


def test_words_enter_the_served_model_and_survive_a_restart(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = worker_settings(
        redis_server.url, tmp_path / "data", vocab_refresh=40, vocab_counted=100_000
    )
    client = connect(settings.store)
    _queue(settings)

    def learned() -> bool:
        snap = read_snapshot(client)
        return drained(client) and snap is not None and snap.counters["vocab_refreshes"] >= 2

    _run(settings, learned)
    model = read_model(client)
    assert model is not None and set(NEW_WORDS) <= set(model.vocab)
    assert len(model.vocab) == settings.model.vocab_size == model.beta.shape[1]
    snap = read_snapshot(client)
    assert snap is not None and snap.vocab_size == len(model.vocab)
    refreshes = snap.counters["vocab_refreshes"]
    assert model.vocab_version == snap.vocab_version == refreshes
    # Scored in the new words after the last refresh too; each point says in which.
    points = read_perplexity(client)
    versions = [p.vocab_version for p in points]
    assert versions == sorted(versions) and versions[-1] == refreshes and versions[0] == 0

    _, vocab, extra = load_model(tmp_path / "data" / CHECKPOINT_NAME)
    assert vocab.words == model.vocab and vocab.version == snap.counters["vocab_refreshes"]
    counts = extra["word_counts"]
    assert counts["documents"] >= COUNT - settings.model.heldout - 10

    # A restart resumes the vocabulary, its version and the counts: with nothing new to read,
    # it serves the same words.
    def resumed() -> bool:
        again = read_model(client)
        return again is not None and again.docs_seen == model.docs_seen

    _run(settings, resumed)
    again = read_model(client)
    assert again is not None and again.vocab == model.vocab
    _, vocab_again, extra_again = load_model(tmp_path / "data" / CHECKPOINT_NAME)
    assert vocab_again.version == vocab.version
    assert extra_again["word_counts"]["documents"] == counts["documents"]
    assert isinstance(vocab_again, Vocabulary)
