"""The worker's record of its topics, end to end: sizes and the articles behind each topic in
the snapshot, the stream's figures beside beta, one history point per evaluation, all kept
across a restart."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from lda.search import share_bound
from service.learn.command import build_worker
from service.learn.heldout_store import HeldoutStore
from service.settings import Settings
from service.store.export import Export, write_directory
from service.store.perplexity import read_perplexity
from service.store.published_model import read_model
from service.store.redis_client import connect
from service.store.snapshot import read_snapshot
from service.store.topic_history import read_topic_history
from tests.service.learn.helpers import (
    HELDOUT,
    articles,
    drained,
    queue_articles,
    wait_until,
    worker_settings,
)
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow  # a real Redis, a worker in this process

COUNT = 150
KEEP = 3


def run_until_scored(settings: Settings, points: int) -> tuple[threading.Event, threading.Thread]:
    client = connect(settings.store)
    stop = threading.Event()
    worker = build_worker(settings, client, stop)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()

    def scored() -> bool:
        snap = read_snapshot(client)
        return (
            drained(client)
            and len(read_perplexity(client)) >= points
            and snap is not None
            and snap.quality_docs is not None
        )

    wait_until(scored, "the worker to learn the stream and score it")
    return stop, thread


def test_sizes_articles_figures_and_history_are_published_and_kept(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = worker_settings(
        redis_server.url, tmp_path / "data", topic_articles=KEEP, export_docs=50
    )
    client = connect(settings.store)
    queue_articles(client, 0, COUNT)
    stop, thread = run_until_scored(settings, 1)
    stop.set()
    thread.join(60)
    assert not thread.is_alive()

    snap = read_snapshot(client)
    assert snap is not None and snap.topic_size is not None and snap.topic_articles is not None
    assert len(snap.topic_size) == snap.n_topics and sum(snap.topic_size) == pytest.approx(1.0)
    # Every listed article is a trained article of the stream, with its title; none held out.
    stream = {a.id: a for a in articles(0, COUNT)}
    held_texts = set(HeldoutStore(client, settings.queue.heldout_key).texts())
    heldout = {a.id for a in stream.values() if a.text in held_texts}
    assert len(heldout) == HELDOUT
    listed = [a for k in range(snap.n_topics) for a in snap.articles(k)]
    assert listed and all(len(snap.articles(k)) <= KEEP for k in range(snap.n_topics))
    for article in listed:
        assert article.id in stream and article.id not in heldout
        assert article.title == stream[article.id].title and 0 < article.share <= 1
        assert article.url is None  # a file source has no link
    for k in range(snap.n_topics):  # surest (aged) first (docs/topics.md)
        half_life = settings.publish.topic_half_life
        for a in snap.articles(k):
            assert a.share_bound is not None and a.tokens is not None and a.tokens >= 20
            expected = share_bound(np.float64(a.share), np.float64(a.tokens), snap.n_topics)
            assert a.share_bound == pytest.approx(float(expected), abs=2e-4)
        aged = [
            a.share_bound * 2 ** ((a.docs_seen - snap.docs_seen) / half_life)
            for a in snap.articles(k)
            if a.share_bound is not None
        ]
        assert aged == sorted(aged, reverse=True)

    model = read_model(client)
    assert model is not None and model.stream is not None
    figures = model.stream
    assert figures.term_frequency.shape == (len(model.vocab),)
    assert figures.doc_topic.shape == (50, model.n_topics) and (figures.doc_lengths > 0).all()
    assert figures.doc_topic.sum(axis=1) == pytest.approx(1.0, abs=1e-5)

    # What the worker published exports to pyLDAvis as it is.
    import pyLDAvis

    write_directory(Export.of(model), tmp_path / "export")
    data = json.loads((tmp_path / "export" / "pyldavis.json").read_text())
    prepared = pyLDAvis.prepare(**data, sort_topics=False)
    assert len(prepared.topic_coordinates) == model.n_topics

    history = read_topic_history(client)
    points = read_perplexity(client)
    assert [p.docs_seen for p in history] == [p.docs_seen for p in points]
    vocab = set(model.vocab)
    for point in history:
        assert point.n_topics == snap.n_topics and len(point.size) == snap.n_topics
        assert all(len(words) == 10 and set(words) <= vocab for words in point.words)

    # A restart resumes the record from the checkpoint: what it listed, it lists again.
    before = [[a.id for a in snap.articles(k)] for k in range(snap.n_topics)]
    stop, thread = run_until_scored(settings, len(points))
    try:
        again = read_snapshot(client)
        assert again is not None
        assert [[a.id for a in again.articles(k)] for k in range(again.n_topics)] == before
    finally:
        stop.set()
        thread.join(60)
