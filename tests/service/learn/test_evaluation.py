"""Held-out scoring off the learner's path: the worker's points equal a synchronous evaluation
of the same beta_means, one per eval_every documents, across a kill -9 and restart, and the
restarted worker continues the same beta_mean (its checkpoint holds the running mean)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from lda.batch import Batch
from lda.evaluation.perplexity import HeldoutSet
from lda.evaluation.scorer import HeldoutScorer
from lda.model import StreamingLDA
from lda.vocab import build_vocabulary
from service.learn.model_store import CHECKPOINT_NAME, load_model
from service.store.perplexity import read_perplexity
from service.store.snapshot import read_snapshot
from tests.service.learn.helpers import (
    VOCAB_DOCS,
    WorkerProcess,
    articles,
    drained,
    queue_articles,
    replay,
    wait_until,
    worker_settings,
)
from tests.support.redis_server import RedisServer

ARTICLES = 150
# Scoring (6,000 sweeps, ~0.8 s a point here) far slower than learning (4 sweeps a minibatch):
# the learner finishes while betas still wait, so the crash leaves some in the checkpoint.
EVAL_SWEEPS = 6000
ENV = {
    "STREAMLDA_CHECKPOINT_EVERY_S": "600",
    "STREAMLDA_CHECKPOINT_MAX_UNACKED": "30",
    "STREAMLDA_EVAL_SWEEPS": str(EVAL_SWEEPS),
    "STREAMLDA_EVAL_BACKLOG": "100",  # no skips: every beta waits for its point
}


def waiting_in_checkpoint(data_dir: Path) -> int:
    """Betas handed off but not yet scored, as the checkpoint in ``data_dir`` lists them."""
    if not (data_dir / CHECKPOINT_NAME).exists():
        return 0
    _, _, extra = load_model(data_dir / CHECKPOINT_NAME)
    return len(extra.get("evaluations", {}).get("pending", []))


@pytest.mark.slow
def test_points_equal_a_synchronous_evaluation_across_a_kill_and_restart(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    data_dir = tmp_path / "data"
    settings = worker_settings(redis_server.url, data_dir, eval_sweeps=EVAL_SWEEPS)
    replayed, _, expected = replay(settings, ARTICLES)
    assert len(expected) >= 5
    queue_articles(client, 0, ARTICLES)
    worker = WorkerProcess(redis_server.url, data_dir, tmp_path / "worker.log", **ENV)
    try:
        wait_until(
            lambda: len(read_perplexity(client)) >= 1 and waiting_in_checkpoint(data_dir) > 0,
            "a point published and betas waiting in a checkpoint",
        )
        worker.kill()
    finally:
        worker.ensure_dead()
    assert len(read_perplexity(client)) < len(expected), "the crash left points to score"
    restarted = WorkerProcess(redis_server.url, data_dir, tmp_path / "worker.log", **ENV)
    try:
        wait_until(
            lambda: drained(client) and len(read_perplexity(client)) >= len(expected),
            "every point after the restart",
        )
        assert restarted.terminate() == 0
    finally:
        restarted.ensure_dead()
    got = [(p.docs_seen, p.perplexity, p.perplexity_avg) for p in read_perplexity(client)]
    assert [docs for docs, _, _ in got] == [docs for docs, _, _ in expected]
    for point, wanted in zip(got, expected, strict=True):
        assert point[1:] == pytest.approx(wanted[1:], rel=1e-9), point[0]
    snap = read_snapshot(client)
    assert snap is not None and snap.counters["evals_skipped"] == 0
    # Per topic, as of the last point: coherence (their mean is the point's), drift, intervals.
    last = read_perplexity(client)[-1]
    k = settings.model.topics
    assert snap.quality_docs == last.docs_seen and snap.topic_coherence is not None
    assert last.coherence is not None and len(snap.topic_coherence) == k
    assert sum(c or 0.0 for c in snap.topic_coherence) / k == pytest.approx(last.coherence)
    assert snap.topic_drift is None or len(snap.topic_drift) == k
    if snap.intervals is not None:  # None when the restarted worker had nothing to retrain
        assert len(snap.intervals) == k
        assert all(len(words) == len(snap.topics[0]) for words in snap.intervals)
        assert all(low <= high for words in snap.intervals for low, high in words)
    resumed, _, _ = load_model(data_dir / CHECKPOINT_NAME)
    assert resumed.docs_seen == replayed.docs_seen
    torch.testing.assert_close(resumed.beta_mean, replayed.beta_mean)
    assert not torch.allclose(resumed.beta_mean, resumed.beta), "the mean is not the last sample"


def test_a_scorer_fed_betas_equals_the_model_evaluating_itself() -> None:
    settings = worker_settings("redis://unused", Path("unused"))
    texts = [a.text for a in articles(0, 80)]
    vocab = build_vocabulary(texts[:VOCAB_DOCS], settings.model.vocab_size)
    encoded = [ids for ids in (vocab.encode(t) for t in texts) if ids]
    heldout = HeldoutSet.from_documents(encoded[:20])
    model = StreamingLDA(settings.model.learner_config(len(vocab)), "cpu", settings.model.seed)
    scorer = HeldoutScorer(
        model.scorer_config, torch.Generator().manual_seed(0), model.posterior_average.__class__()
    )
    scorer.load_state_dict(model.scorer().state_dict())  # a copy: separate generator and average
    for start in range(20, 60, 10):
        model.update(Batch.from_ids(encoded[start : start + 10]))
        beta = model.beta_mean.clone()  # what the worker hands off
        assert scorer.score(beta, heldout) == model.evaluate(heldout)
