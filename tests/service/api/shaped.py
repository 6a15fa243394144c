"""A learner whose topics moved, published by the real publisher: the state the API serves
while topics are born, merged and retired, made without a worker.

Six slots, four live topics (numbers 0-3) at the start; then, in order: slot 1's topic 1 merged
into slot 0's topic 0, topic 2 retired, topic 4 born in slot 4, topic 5 born in slot 1, and
topic 0 merged into topic 3 (so 1 -> 0 -> 3 is a chain). Live at the end: slots 1, 3, 4 with
numbers 5, 3, 4; gone: 0 and 1 (merged into 3), 2 (retired); 6 was never used. A birth is a
division (the shaper's split) that gives a few words to the free slot, recorded as a birth.
"""

from __future__ import annotations

import threading

import numpy as np
import redis
import torch

from lda.batch import Batch
from lda.config import LearnerConfig
from lda.model import StreamingLDA
from lda.shaping import moves
from lda.shaping.divide import divide
from lda.vocab import Vocabulary
from service.learn.publisher import PublishConfig, Publisher, WorkerStatus
from service.learn.topic_watch import TopicWatch
from service.settings import Settings
from service.store.published_model import StreamFigures
from service.store.redis_retry import RedisRetry, RetryConfig
from service.store.search import IndexRows

WORDS = [
    "apple", "banana", "cherry", "grape", "engine", "piston", "turbine", "valve",
    "sonata", "violin", "cello", "opera", "river", "delta", "canyon", "glacier",
]  # fmt: skip
BATCHES = [[[0, 1, 2, 3, 0, 1], [4, 5, 6, 7, 4]], [[8, 9, 10, 11, 8], [12, 13, 14, 15, 12, 13]]]
LIVE = [5, 3, 4]  # the live numbers, in slot order
MERGED, RETIRED, NEVER = (0, 1), 2, 6
# When each move happened (documents seen, Unix time), in the order above.
AT = [(100, 1_764_000_100.0), (200, 1_764_000_200.0), (300, 1_764_000_300.0),
      (400, 1_764_000_400.0), (500, 1_764_000_500.0)]  # fmt: skip


def fixed_model() -> StreamingLDA:
    """Four topics, K fixed (no max_topics), trained a little."""
    model = StreamingLDA(_config(None), seed=3)
    for ids in BATCHES:
        model.update(Batch.from_ids(ids))
    return model


def _config(live: int | None) -> LearnerConfig:
    slots = 4 if live is None else 6
    return LearnerConfig(
        slots,
        len(WORDS),
        live_topics=live,
        sampler="sgrld",
        sweeps=2,
        corpus_size=50.0,
        learn_gamma=True,  # gamma_k per topic: a merge adds them, a division shares them
    )


def _top(model: StreamingLDA, slot: int) -> tuple[str, ...]:
    ids, _ = model.top_words(3)
    return tuple(WORDS[i] for i in ids[slot].tolist())


def _born(model: StreamingLDA, slot: int, words: list[int], g: torch.Generator) -> None:
    """Free ``slot`` takes ``words`` whole from the live topic that holds most of them."""
    beta = model.beta_mean
    parent = max(model.topic_ids.live_slots(), key=lambda s: float(beta[s, words].sum()))
    fraction = torch.ones(len(WORDS), dtype=torch.float64)
    fraction[words] = 0.0  # what the parent keeps
    divide(model, parent, fraction, slot, g)


def unmoved_model() -> StreamingLDA:
    """Six slots, four live topics (numbers 0-3), trained a little, nothing moved yet."""
    model = StreamingLDA(_config(4), seed=3)
    for ids in BATCHES:
        model.update(Batch.from_ids(ids))
    return model


def shaped_model() -> StreamingLDA:
    """The learner of this module's docstring."""
    model = unmoved_model()
    g, numbers = torch.Generator().manual_seed(1), model.topic_ids
    before = (_top(model, 0), _top(model, 1))
    moves.merge(model, 0, 1, g)
    numbers.merged(0, 1, *AT[0], before=before, after=_top(model, 0))
    gone = _top(model, 2)
    moves.retire(model, 2, g)
    numbers.retired(2, *AT[1], before=gone)
    _born(model, 4, [12, 13, 14], g)
    assert numbers.born(4, *AT[2], after=_top(model, 4)) == 4
    _born(model, 1, [8, 9, 10], g)
    assert numbers.born(1, *AT[3], after=_top(model, 1)) == 5
    before = (_top(model, 3), _top(model, 0))
    moves.merge(model, 3, 0, g)
    numbers.merged(3, 0, *AT[4], before=before, after=_top(model, 3))
    assert numbers.live_ids() == LIVE
    return model


def publisher(client: redis.Redis, every_s: float = 0.0) -> Publisher:
    """The worker's publisher on ``client``, as a lone worker makes it (``every_s``: the least
    time between snapshots)."""
    retry = RedisRetry(Settings().part(RetryConfig), threading.Event())
    config = PublishConfig(
        topic_words=10, perplexity_history=10, publish_every_s=every_s, topic_history=10
    )
    return Publisher(client, retry, config, TopicWatch(samples=0), "cpu")


def status(k: int) -> WorkerStatus:
    """The worker's figures for a snapshot of ``k`` slots (sizes and seeds per slot)."""
    return WorkerStatus(
        docs_per_s=1.0, tokens_per_s=10.0, fresh_docs_per_s=1.0, revisit_docs_per_s=0.0,
        fresh_wait_s=None, fresh_wait_p95_s=None, reservoir_articles=0, reservoir_passes=0.0,
        rank_docs_per_s=[1.0], counters={"updates": 2}, idle_since=None, checkpoint_at=None,
        topic_size=[(s + 1) / (k * (k + 1) / 2) for s in range(k)],
        topic_seeds=[[] for _ in range(k)],
    )  # fmt: skip


def figures(k: int) -> StreamFigures:
    """The stream's figures over ``k`` slots: slot s holds share s + 1 (normalised), three
    documents."""
    doc_topic = np.zeros((3, k), dtype=np.float32)
    doc_topic[:, 1], doc_topic[:, 3] = 0.75, 0.25
    return StreamFigures(
        term_frequency=np.arange(1.0, len(WORDS) + 1),
        topic_size=np.arange(1.0, k + 1) / (k * (k + 1) / 2),
        doc_lengths=np.array([40, 30, 25]),
        doc_topic=doc_topic,
    )


# Two kept articles: "Violin" mostly in slot 1, "Delta" in slot 4 (then slot 2, freed).
ARTICLES = [("Violin", "11", "wikipedia"), ("Delta", "12", "wikipedia")]


def index(k: int) -> IndexRows:
    """The kept articles' shares by slot, as the worker's search part publishes them."""
    return IndexRows(
        refs=list(ARTICLES),
        topics=np.array([[1, 3], [min(4, k - 1), 2]], dtype=np.int16),
        shares=np.array([[0.8, 0.2], [0.6, 0.3]], dtype=np.float32),
        tokens=np.array([50.0, 40.0], dtype=np.float32),
        at=np.array([400, 450], dtype=np.int64),
        n_topics=k,
    )


def publish(client: redis.Redis, model: StreamingLDA) -> Publisher:
    """The model (with the stream's figures and kept articles) and a snapshot of ``model``,
    as the worker's showing part publishes them."""
    shown = publisher(client)
    vocab, k = Vocabulary(WORDS), model.topic_ids.n_slots
    shown.model(model, vocab, figures(k), index(k))
    shown.snapshot(model, vocab, status(k))
    return shown
