"""The word intervals' window: whole samples where reading one is a division (dense chains), the
published words only where it would draw every column a step did not touch (the lazy chain)."""

from __future__ import annotations

import torch

from lda.batch import Batch
from lda.model import LearnerConfig, StreamingLDA
from service.learn.topic_watch import TopicWatch


def _stepped(sampler: str) -> StreamingLDA:
    model = StreamingLDA(LearnerConfig(n_topics=4, n_words=30, sampler=sampler), "cpu", 0)
    g = torch.Generator().manual_seed(0)
    model.update(Batch.from_ids(torch.randint(0, 30, (8, 12), generator=g).tolist()))
    return model


def test_the_lazy_chain_is_sampled_at_the_published_words_only() -> None:
    model = _stepped("scir")
    assert model.whole_reads_cost_draws
    watch = TopicWatch(samples=5)
    watch.sample_from(model)  # nothing published yet: no words to follow
    assert watch.window is not None and watch.window.count == 0
    served, _ = model.top_words(3)
    watch.fields(served)
    for _ in range(2):
        watch.sample_from(model)
    assert watch.window.word_ids is not None and watch.window.values is not None
    assert tuple(watch.window.values.shape[1:]) == (4, 3)
    assert watch.fields(served)["intervals"] is not None


def test_a_dense_chain_keeps_whole_samples() -> None:
    model = _stepped("sgrld")
    assert not model.whole_reads_cost_draws
    watch = TopicWatch(samples=5)
    watch.sample_from(model)
    assert watch.window is not None and watch.window.word_ids is None
    assert watch.window.values is not None and tuple(watch.window.values.shape[1:]) == (4, 30)
