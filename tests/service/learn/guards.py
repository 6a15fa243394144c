"""The live job's guards as assertions, one home for the tests at a fixed K and for those whose
topics move (test_revisit, test_search_worker, test_guards_with_moves)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from service.ingest.sources import Article
from service.learn.heldout_store import HeldoutStore
from service.settings import Settings
from service.store.published_model import PublishedModel, read_model
from service.store.search import index_rows
from service.store.snapshot import read_snapshot
from tests.service.learn.helpers import HELDOUT, articles


def revisited_up_to_the_ratio(
    worker: Any, client: redis.Redis, settings: Settings, queued: int, ratio: float
) -> int:
    """A quiet worker that learned ``queued`` articles revisited ``ratio`` of them, no more than
    a minibatch over, and the reservoir and the snapshot say so: the documents it learned."""
    model = worker.model
    assert model is not None
    trained = model.docs_seen
    assert trained == queued - HELDOUT - worker.counters["empty_docs"]
    batch = settings.model.batch_size
    assert ratio * trained <= model.revisited_docs < ratio * trained + batch
    assert worker.revisits.reservoir is not None and worker.revisits.reservoir.size == trained
    snap = read_snapshot(client)
    assert snap is not None and snap.docs_seen == trained
    assert snap.reservoir_articles == trained
    assert snap.reservoir_passes == pytest.approx(model.revisited_docs / trained)
    return int(trained)


def kept_rows(
    client: redis.Redis, settings: Settings, count: int
) -> tuple[PublishedModel, dict[str, Article], set[str]]:
    """The published search rows of the first ``count`` articles: one per kept article, none
    held out, each under its title. (The published model, the stream by id, the kept ids.)"""
    model = read_model(client)
    assert model is not None and model.index_fields is not None
    rows = index_rows(model.index_fields, model.n_topics)
    assert rows is not None
    stream = {a.id: a for a in articles(0, count)}
    held_texts = set(HeldoutStore(client, settings.queue.heldout_key).texts())
    heldout = {key for key, a in stream.items() if a.text in held_texts}
    kept = {ref[1] for ref in rows.refs}
    assert kept and kept <= stream.keys() - heldout
    assert len(kept) == len(rows.refs)  # one row each
    assert all(title == stream[key].title for title, key, _ in rows.refs)
    return model, stream, kept
