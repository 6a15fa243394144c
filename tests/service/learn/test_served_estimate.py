"""The topics served are beta_mean and the sample is there on request, end to end: a worker
process learns from real articles on a real Redis (STREAMLDA_MEAN_DECAY set), then the API's
/topics, /infer's model and the perplexity points equal a learner replayed here on the same
minibatches."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
import torch

from service.api.app import create_app
from service.learn.model_store import CHECKPOINT_NAME, load_model
from service.store.perplexity import read_perplexity
from service.store.published_model import read_model
from service.store.snapshot import WordWeight, ranked_words, read_snapshot, top_words
from tests.service.conftest import FreshClient
from tests.service.learn.helpers import (
    HELDOUT,
    WorkerProcess,
    drained,
    queue_articles,
    replay,
    wait_until,
    worker_settings,
)
from tests.support.redis_server import RedisServer

pytestmark = pytest.mark.slow

ARTICLES = 80
MEAN_DECAY = 0.8  # not the default: the setting must reach the worker's learner


def learned(client: redis.Redis) -> int:
    """Articles the worker is done with: trained, held out, or empty in its vocabulary."""
    snap = read_snapshot(client)
    return -1 if snap is None else snap.docs_seen + HELDOUT + snap.counters["empty_docs"]


def pairs(topics: list[list[WordWeight]]) -> list[list[tuple[str, float]]]:
    return [[(w.word, w.weight) for w in words] for words in topics]


def served(body: dict) -> list[list[tuple[str, float]]]:
    return [[(w["word"], w["weight"]) for w in topic["words"]] for topic in body["topics"]]


def test_api_serves_the_workers_beta_mean_and_its_sample_on_request(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    data_dir = tmp_path / "data"
    queue_articles(client, 0, ARTICLES)
    worker = WorkerProcess(
        redis_server.url, data_dir, tmp_path / "worker.log", STREAMLDA_MEAN_DECAY=str(MEAN_DECAY)
    )
    try:
        # Drained: the last checkpoint, which publishes the model, holds every update.
        wait_until(lambda: learned(client) == ARTICLES and drained(client), "every article")
        assert worker.terminate() == 0
    finally:
        worker.ensure_dead()
    settings = worker_settings(redis_server.url, data_dir, mean_decay=MEAN_DECAY)
    model, vocab, points = replay(settings, ARTICLES)
    checkpoint, _, _ = load_model(data_dir / CHECKPOINT_NAME)
    assert checkpoint.config.mean_decay == MEAN_DECAY
    assert checkpoint.docs_seen == model.docs_seen and model.state.step >= 5
    torch.testing.assert_close(checkpoint.beta_mean, model.beta_mean)

    words = settings.publish.topic_words
    mean = pairs(top_words(model.beta_mean, vocab.words, words))
    # The sample as the worker ranks it: for SCIR's lazy chain, among the mean's top words
    # (StreamingLDA.top_words), with no K x W draw.
    sample_ids, sample_weights = model.top_words(words, "sample")
    sample = pairs(ranked_words((sample_weights, sample_ids), vocab.words))
    assert mean != sample, "the mean and the sample must differ, else this proves nothing"
    with FreshClient(create_app(settings)) as api:
        default = api.get("/topics", params={"top": words}).json()
        asked = api.get("/topics", params={"top": words, "estimate": "sample"}).json()
        one = api.get("/topics/3", params={"top": words, "estimate": "sample"}).json()
    assert default["docs_seen"] == asked["docs_seen"] == model.docs_seen
    assert (default["estimate"], asked["estimate"], one["estimate"]) == ("mean", "sample", "sample")
    for got, wanted in ((served(default), mean), (served(asked), sample)):
        assert [[w for w, _ in t] for t in got] == [[w for w, _ in t] for t in wanted]
        flat = [p for t in got for _, p in t]
        assert flat == pytest.approx([p for t in wanted for _, p in t], rel=1e-6)
    assert [w["word"] for w in one["words"]] == [w for w, _ in sample[3]]

    published = read_model(client)  # what /infer uses
    assert published is not None and published.docs_seen == model.docs_seen
    torch.testing.assert_close(torch.from_numpy(published.beta), model.beta_mean.float())
    got_points = [(p.docs_seen, p.perplexity, p.perplexity_avg) for p in read_perplexity(client)]
    assert [p[0] for p in got_points] == [p[0] for p in points] and len(points) >= 2
    for point, wanted_point in zip(got_points, points, strict=True):
        assert point[1:] == pytest.approx(wanted_point[1:], rel=1e-9)  # beta_mean's perplexity
