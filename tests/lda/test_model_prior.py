"""The learner's learned gamma: it moves after the burn-in, feeds the sweeps and the scorer,
survives a checkpoint exactly, and a checkpoint from before it loads with the symmetric prior."""

from __future__ import annotations

import dataclasses

import torch

from lda.batch import Batch
from lda.model import LearnerConfig, StreamingLDA
from lda.prior import PriorSchedule


def batches(n: int, seed: int = 0) -> list[Batch]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        # two kinds of document: words 0-9 or words 10-29, so topics are used unequally
        docs = [
            (torch.randint(10, (15,), generator=g) + (10 if i % 3 else 0)).tolist()
            for i in range(12)
        ]
        out.append(Batch.from_ids(docs))
    return out


def learner(learn: bool) -> StreamingLDA:
    config = LearnerConfig(n_topics=4, n_words=30, sampler="scir", learn_gamma=learn)
    model = StreamingLDA(config, seed=3)
    model.prior.schedule = PriorSchedule(burn_in=2)
    return model


def test_gamma_is_learned_only_when_asked_and_reaches_the_scorer() -> None:
    fixed, learned = learner(False), learner(True)
    for batch in batches(8):
        fixed.update(batch)
        learned.update(batch)
    assert fixed.gamma == fixed.config.gamma
    assert isinstance(learned.gamma, tuple) and len(learned.gamma) == 4
    assert learned.scorer_config.gamma == learned.gamma


def test_a_resumed_learner_continues_exactly() -> None:
    data = batches(8)
    whole = learner(True)
    for batch in data:
        whole.update(batch)
    first = learner(True)
    for batch in data[:4]:
        first.update(batch)
    resumed = StreamingLDA.from_state_dict(first.state_dict())
    resumed.prior.schedule = first.prior.schedule
    for batch in data[4:]:
        resumed.update(batch)
    assert resumed.gamma == whole.gamma
    assert torch.equal(resumed.state.theta, whole.state.theta)


def test_a_checkpoint_from_before_the_learned_prior_loads_symmetric() -> None:
    model = learner(False)
    model.update(batches(1)[0])
    state = model.state_dict()
    del state["prior"]
    config = dict(state["config"])
    del config["learn_gamma"]
    state["config"] = config
    old = StreamingLDA.from_state_dict(state)
    assert old.gamma == model.config.gamma and not old.prior.learn
    assert dataclasses.asdict(old.config) == dataclasses.asdict(model.config)
