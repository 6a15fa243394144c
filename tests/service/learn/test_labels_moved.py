"""A change of topic labels is one event: sent to a real worker with revisits, search and seeds
on, it moves everything the worker keeps per topic (the record's articles and sizes, the names,
the seeds and the search rows), in the worker and in what it publishes."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from service.learn import events
from service.learn.command import build_worker
from service.learn.search.part import Search
from service.learn.topic_record import Record
from service.store.published_model import read_model
from service.store.redis_client import connect
from service.store.search import IndexRows, index_rows
from service.store.snapshot import read_snapshot
from service.store.topic_names import read_topic_names, set_topic_name
from service.store.topic_seeds import TopicSeeds, read_topic_seeds, set_topic_seeds
from tests.service.learn.helpers import queue_articles, worker_settings
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow  # a real Redis, a worker stepped in this process

MATCHED = [3, 0, 4, 1, 2]  # topic k is now what topic MATCHED[k] was
NEW = {old: new for new, old in enumerate(MATCHED)}  # where each old label went


def _topics(rows: IndexRows) -> dict[str, dict[int, float]]:
    """Each kept article's largest shares, by topic."""
    kept = zip(rows.refs, rows.topics, rows.shares, strict=True)
    return {
        ref[1]: {int(t): float(s) for t, s in zip(topics, shares, strict=True) if t >= 0}
        for ref, topics, shares in kept
    }


def _moved(rows: dict[str, dict[int, float]]) -> dict[str, dict[int, float]]:
    return {key: {NEW[t]: s for t, s in shares.items()} for key, shares in rows.items()}


def test_one_event_moves_articles_sizes_names_seeds_and_search_rows(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    settings = worker_settings(
        redis_server.url,
        tmp_path / "data",
        revisit=True,
        reservoir_size=500,
        search_refresh_share=0.0,  # rows change only by learning and by the move
    )
    client = connect(settings.store)
    queue_articles(client, 0, 90)
    worker = build_worker(settings, client, threading.Event())
    record, search = worker.parts.of(Record), worker.parts.of(Search)
    assert record is not None and search is not None
    worker._start()
    for _ in range(400):  # learn the stream (revisits included) until the record lists some
        worker.step()
        if record.now is not None and worker.model is not None and worker.model.docs_seen >= 50:
            break
    model, vocab = worker.model, worker.session.vocabulary
    assert model is not None and vocab is not None and record.now is not None
    assert search.now is not None
    # An operator's name and seed, reached the worker at its next plan.
    word = vocab.words[0]
    set_topic_name(client, 3, "the third")
    set_topic_seeds(client, 1, TopicSeeds((word,), 3.0))
    worker.step()  # (an evaluation scored here may move labels too: read what it left)
    names, seeds = read_topic_names(client), dict(worker.seeds.topics)
    assert set(names.values()) == {"the third"} and len(seeds) == 1
    assert {k for k, _, _ in model.seeds.triples()} == set(seeds)  # the prior is theirs
    docs = model.docs_seen
    articles, sizes = record.now.article_rows(docs), record.sizes()
    assert sizes is not None and any(articles)
    rows = _topics(search.now.rows())
    assert rows

    worker.announce(events.LabelsMoved(MATCHED, since=docs + 1))

    assert record.now.article_rows(docs) == [articles[m] for m in MATCHED]
    assert record.sizes() == [sizes[m] for m in MATCHED]
    assert read_topic_names(client) == {NEW[k]: name for k, name in names.items()}
    moved_seeds = {NEW[k]: s for k, s in seeds.items()}
    assert worker.seeds.topics == moved_seeds and read_topic_seeds(client)[1] == moved_seeds
    assert {k for k, _, _ in model.seeds.triples()} == set(moved_seeds)  # the prior followed
    assert _topics(search.now.rows()) == _moved(rows) != rows

    # What the worker publishes next shows them moved.
    worker._checkpoint("requested")
    snapshot = read_snapshot(client)
    assert snapshot is not None and snapshot.topic_seeds is not None
    assert [k for k, words in enumerate(snapshot.topic_seeds) if words] == list(moved_seeds)
    assert snapshot.topic_articles is not None
    assert [[r[:2] for r in t] for t in snapshot.topic_articles] == [
        [r[:2] for r in articles[m]] for m in MATCHED
    ]
    published = read_model(client)
    assert published is not None and published.index_fields is not None
    served = index_rows(published.index_fields, published.n_topics)
    assert served is not None
    assert _topics(served) == _moved(rows)
    assert np.isclose(sum(record.sizes() or []), sum(sizes))
    worker.scoring.close()
    worker.announce(events.Stopped())
