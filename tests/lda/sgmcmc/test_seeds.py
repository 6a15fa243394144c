"""Seed words' priors alpha_kw = alpha + s_kw (docs/model.md, "Seeded topics"): the closed
forms still equal the generic recipe under a per-coordinate prior, and every chain's seeded
coordinates settle at Gamma(alpha + s)'s mean where no data reaches them."""

from __future__ import annotations

import pytest
import torch

from lda.batch import Batch
from lda.model import LearnerConfig, StreamingLDA
from lda.sgmcmc.averaging import ExponentialMean
from lda.sgmcmc.chain import DenseChain
from lda.sgmcmc.gradient import MinibatchStatistics, log_posterior_gradient
from lda.sgmcmc.recipe import recipe_step
from lda.sgmcmc.samplers import SAMPLERS, Hyper, init_state, sgrhmc_euler
from lda.sgmcmc.schedules import StepSchedule
from lda.sgmcmc.seeds import SeedPrior, pseudo_counts

K, W = 3, 5
DIM = K * W


def _seeded_problem() -> tuple[torch.Tensor, torch.Tensor, MinibatchStatistics, Hyper]:
    g = torch.Generator().manual_seed(11)
    theta = 0.5 + 2.0 * torch.rand(K, W, generator=g, dtype=torch.float64)
    momentum = torch.randn(K, W, generator=g, dtype=torch.float64)
    counts = torch.randint(0, 6, (K, W), generator=g).to(torch.float64)
    seeds = SeedPrior.of([(0, 1, 4.0), (2, 3, 1.5), (2, 4, 7.0)])
    excess = seeds.excess((K, W), torch.float64)
    return theta, momentum, MinibatchStatistics(counts, 7.0), Hyper(0.3, 0.1, 1.7, excess)


@pytest.mark.parametrize("name", ["sgld", "sghmc", "sgrld", "sgrhmc"])
def test_seeded_closed_form_equals_the_recipe_with_a_per_coordinate_prior(name: str) -> None:
    theta, momentum, stats, hyper = _seeded_problem()
    spec = SAMPLERS[name]
    eps = 0.013
    noise_r = torch.randn(K, W, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    update = sgrhmc_euler if name == "sgrhmc" else spec.update
    assert update is not None
    r = momentum if spec.uses_momentum else None
    new_theta, new_r = update(theta, r, stats, hyper, eps, noise_r)

    alpha_kw = hyper.alpha_kw  # the oracle's potential: Gamma(alpha_kw, 1) priors

    def grad_h(z: torch.Tensor) -> torch.Tensor:
        t = z[:DIM].reshape(K, W)
        grad_u = -log_posterior_gradient(t, stats, alpha_kw).reshape(-1)
        return torch.cat([grad_u, z[DIM:]]) if spec.uses_momentum else grad_u

    D, Q = spec.diffusion(DIM, hyper)
    if spec.uses_momentum:
        z = torch.cat([theta.reshape(-1), momentum.reshape(-1)])
        noise = torch.cat([torch.randn(DIM, dtype=torch.float64), noise_r.reshape(-1)])
    else:
        z, noise = theta.reshape(-1), noise_r.reshape(-1)
    z_new = recipe_step(z, grad_h, D, Q, eps, noise)
    torch.testing.assert_close(new_theta.reshape(-1), z_new[:DIM], rtol=1e-10, atol=1e-10)

    # Sharp: without the seeds, exactly the seeded coordinates (of theta, or of the momentum
    # that carries the gradient in HMC) move otherwise.
    flat = Hyper(hyper.alpha, hyper.gamma, hyper.friction)
    plain_theta, plain_r = update(theta, r, stats, flat, eps, noise_r)
    moved = (new_r - plain_r if spec.uses_momentum else new_theta - plain_theta).abs() > 1e-6
    assert moved.nonzero().tolist() == [[0, 1], [2, 3], [2, 4]]


def _learner(sampler: str, n_words: int, seeds: SeedPrior) -> StreamingLDA:
    """A small learner; "scir-dense" is SCIR's dense chain, as a GPU runs it."""
    dense = sampler == "scir-dense"
    config = LearnerConfig(
        n_topics=2,
        n_words=n_words,
        sampler="scir" if dense else sampler,
        schedule=StepSchedule(0.5),
        corpus_size=40.0,
        sweeps=2,
    )
    chain = None
    if dense:
        g = torch.Generator().manual_seed(3)
        state = init_state("scir", 2, n_words, g, torch.float64)
        chain = DenseChain(config, state, ExponentialMean(0.995))
    model = StreamingLDA(config, seed=3, chain=chain)
    model.set_seeds(seeds)
    return model


@pytest.mark.parametrize("sampler", ["scir", "scir-dense", "sgrld"])
def test_seeded_coordinates_no_data_reaches_settle_at_the_prior_mean(sampler: str) -> None:
    """Words 100..299 never occur; topic 0 seeds them with s = 5. Their theta_0w are then
    Gamma(alpha + 5, 1) draws (sd 2.2 to 2.5): 200 of them average alpha + 5 +- 0.5 (3 sd).
    The lazy chain (SCIR on the CPU) steps seeded columns every step; its pseudo-counts
    s n/N must not be mistaken for counts of the kept sweeps or N/n. Unseeded, those
    coordinates stay at their start or fall to alpha."""
    seeds = SeedPrior.of((0, w, 5.0) for w in range(100, 300))
    model = _learner(sampler, 300, seeds)
    assert model.config.alpha is not None
    target = model.config.alpha + 5.0
    seeded = _unreached_mean(model)
    assert abs(seeded - target) < 0.5, (seeded, target)
    plain = _unreached_mean(_learner(sampler, 300, SeedPrior.none()))
    assert abs(plain - target) > 3.0, plain  # the same coordinates unseeded


def _unreached_mean(model: StreamingLDA) -> float:
    """Topic 0's mean theta over words 100..299 after 60 steps on documents of words 0..99."""
    g = torch.Generator().manual_seed(0)
    for _ in range(60):
        docs = [torch.randint(0, 100, (20,), generator=g).tolist() for _ in range(4)]
        model.update(Batch.from_ids(docs))
    return float(model.state.theta[0, 100:].mean())


def test_seeds_survive_a_checkpoint_and_follow_a_vocabulary_change() -> None:
    seeds = SeedPrior.of([(1, 4, 2.0), (0, 7, 3.0)])
    model = _learner("scir", 10, seeds)
    model.update(Batch.from_ids([[0, 1, 2], [3, 4]]))
    restored = StreamingLDA.from_state_dict(model.state_dict())
    assert restored.seeds.triples() == [(0, 7, 3.0), (1, 4, 2.0)]
    # New word j's old column: word 7 moves to column 0, word 4 leaves, one word enters.
    restored.remap_vocabulary(torch.tensor([7, 0, 1, -1]))
    assert restored.seeds.triples() == [(0, 0, 3.0)]
    with pytest.raises(ValueError, match="outside"):
        restored.set_seeds(SeedPrior.of([(2, 0, 1.0)]))
    with pytest.raises(ValueError, match="positive"):
        SeedPrior.of([(0, 0, 0.0)])


def test_strength_is_a_percent_of_an_average_topics_tokens() -> None:
    """s = strength N L / (100 K): proportional to the strength and to the tokens an average
    topic gathers over the corpus, so a strength means the same at any N, L and K."""
    assert pseudo_counts(1.0, 6_900_000, 500, 50) == pytest.approx(690_000)
    base = pseudo_counts(0.5, 1e6, 400, 100)
    assert pseudo_counts(1.0, 1e6, 400, 100) == pytest.approx(2 * base)
    assert pseudo_counts(0.5, 2e6, 400, 200) == pytest.approx(base)
    assert pseudo_counts(0.5, 1e6, 800, 200) == pytest.approx(base)
    for bad in [(0.0, 1e6, 400, 100), (-1.0, 1e6, 400, 100), (1.0, 0.0, 400, 100)]:
        with pytest.raises(ValueError):
            pseudo_counts(*bad)
