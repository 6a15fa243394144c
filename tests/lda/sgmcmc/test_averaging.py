"""beta_mean: the exponential mean of the chain's samples, against its definition, and the
estimate the model scores and ranks words by unless asked for the sample."""

from __future__ import annotations

import pytest
import torch

from lda.batch import Batch
from lda.evaluation.perplexity import HeldoutSet, PosteriorAverage
from lda.evaluation.scorer import HeldoutScorer
from lda.model import LearnerConfig, StreamingLDA
from lda.sgmcmc.averaging import ExponentialMean


def _definition(samples: list[torch.Tensor], decay: float) -> torch.Tensor:
    """sum_s decay^(t-s) x_s / sum_s decay^(t-s), written out."""
    t = len(samples)
    weights = [decay ** (t - 1 - s) for s in range(t)]
    return sum(w * x for w, x in zip(weights, samples, strict=True)) / sum(weights)


@pytest.mark.parametrize("decay", [0.0, 0.5, 0.97])
def test_exponential_mean_equals_its_definition_at_every_step(decay: float) -> None:
    generator = torch.Generator().manual_seed(3)
    samples = [torch.rand(3, 4, generator=generator, dtype=torch.float64) for _ in range(7)]
    mean = ExponentialMean(decay)
    for t in range(1, len(samples) + 1):
        mean.add(samples[t - 1])
        torch.testing.assert_close(mean.value, _definition(samples[:t], decay))
    if decay == 0.0:
        torch.testing.assert_close(mean.value, samples[-1], rtol=0, atol=0)


def test_exponential_mean_refuses_bad_decay_and_an_empty_value() -> None:
    with pytest.raises(ValueError):
        ExponentialMean(1.0)
    with pytest.raises(ValueError):
        ExponentialMean(-0.1)
    with pytest.raises(ValueError, match="no sample"):
        _ = ExponentialMean(0.9).value


def _batches() -> list[Batch]:
    generator = torch.Generator().manual_seed(0)
    docs = torch.randint(0, 12, (24, 6), generator=generator).tolist()
    return [Batch.from_ids(docs[i : i + 6]) for i in range(0, 24, 6)]


def test_beta_mean_is_the_exponential_mean_of_the_betas_after_each_step() -> None:
    model = StreamingLDA(LearnerConfig(4, 12, sampler="sgrhmc", sweeps=4, mean_decay=0.8), seed=1)
    torch.testing.assert_close(model.beta_mean, model.beta)  # no step yet: the initial sample
    betas = []
    for batch in _batches():
        model.update(batch)
        betas.append(model.beta.clone())
    torch.testing.assert_close(model.beta_mean, _definition(betas, 0.8))
    torch.testing.assert_close(model.beta_mean.sum(1), torch.ones(4, dtype=torch.float64))
    assert not torch.allclose(model.beta_mean, model.beta)  # the mean is not the last sample


def test_a_resumed_learner_continues_the_same_mean() -> None:
    config = LearnerConfig(4, 12, sampler="sgrld", sweeps=4, mean_decay=0.9)
    batches = _batches()
    straight = StreamingLDA(config, seed=5)
    for batch in batches:
        straight.update(batch)
    first = StreamingLDA(config, seed=5)
    for batch in batches[:2]:
        first.update(batch)
    resumed = StreamingLDA.from_state_dict(first.state_dict())
    for batch in batches[2:]:
        resumed.update(batch)
    torch.testing.assert_close(resumed.beta_mean, straight.beta_mean, rtol=0, atol=0)


def test_a_checkpoint_from_before_beta_mean_still_loads() -> None:
    model = StreamingLDA(LearnerConfig(4, 12, sweeps=4), seed=2)
    model.update(_batches()[0])
    state = model.state_dict()
    del state["mean"]
    del state["config"]["mean_decay"]
    old = StreamingLDA.from_state_dict(state)
    torch.testing.assert_close(old.beta_mean, old.beta)  # starts afresh from the sample


def test_evaluate_and_top_words_take_beta_mean_unless_asked_for_the_sample() -> None:
    model = StreamingLDA(LearnerConfig(4, 12, sampler="sgrld", sweeps=4, mean_decay=0.8), seed=3)
    for batch in _batches():
        model.update(batch)
    heldout = HeldoutSet.from_documents([list(range(12)) * 2, [0, 1, 2, 3] * 5])
    scorer = HeldoutScorer(model.scorer_config, torch.Generator(), PosteriorAverage())
    scores = []
    for which, beta in ((None, model.beta_mean), ("sample", model.beta)):
        scorer.load_state_dict(model.scorer().state_dict())  # the draws of the model's next score
        expected = scorer.score(beta, heldout)[0]
        got = model.evaluate(heldout) if which is None else model.evaluate(heldout, which)
        assert got[0] == expected, which
        scores.append(expected)
    assert scores[0] != scores[1]  # the two estimates really differ here
    ids, weights = model.top_words(3)
    torch.testing.assert_close(weights, model.beta_mean.gather(1, ids), rtol=0, atol=0)
    ids, weights = model.top_words(3, "sample")
    torch.testing.assert_close(weights, model.beta.gather(1, ids), rtol=0, atol=0)
