"""The chain a learner steps: a dense and a lazy implementation of one interface, chosen once.

:class:`lda.sgmcmc.minibatch.Chain` is what :class:`lda.model.StreamingLDA` needs of its
sampler's state. :class:`DenseChain` steps the whole theta with
:func:`lda.sgmcmc.samplers.step` (any sampler, any device) and keeps beta_mean as an exponential
mean of beta; :class:`lda.sgmcmc.scir.chain.LazySCIRChain` steps only the minibatch's columns
(SCIR on the CPU, :mod:`lda.sgmcmc.scir.lazy`). :func:`new_chain` and :func:`restore_chain`
make the choice (:func:`is_lazy`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from lda.config import Estimate, LearnerConfig
from lda.sgmcmc.averaging import ExponentialMean
from lda.sgmcmc.columns import ColumnMap, prior_columns, remap_mean
from lda.sgmcmc.gradient import MinibatchStatistics
from lda.sgmcmc.minibatch import (
    Chain,
    Minibatch,
    divide_mean_rows,
    merge_mean_rows,
    restart_mean_row,
    spread_with_mean,
)
from lda.sgmcmc.samplers import SAMPLERS, NonFiniteError, SamplerState, StepInfo, init_state, step
from lda.sgmcmc.scir.chain import LazySCIRChain
from lda.sgmcmc.scir.lazy import LazyChain
from lda.sgmcmc.seeds import SeedPrior


def all_finite(*tensors: torch.Tensor) -> bool:
    """Every entry of every tensor finite. Finite sums prove it (NaN and inf propagate) with
    no (K, W) mask as isfinite(x).all() makes, in one host read for all the tensors (a GPU
    step's only one); only a non-finite sum, or one that overflowed, is checked fully."""
    sums = torch.stack([x.sum() for x in tensors])
    return bool(torch.isfinite(sums).all()) or all(bool(torch.isfinite(x).all()) for x in tensors)


class DenseChain:
    """The whole theta (and an HMC sampler's momentum) stepped by
    :func:`lda.sgmcmc.samplers.step`; beta_mean the exponential mean of beta after each step.
    States are replaced, never changed in place, so beta is computed once per state: the mean
    takes it after a step and the next step's Gibbs sweeps read it again."""

    def __init__(self, config: LearnerConfig, state: SamplerState, mean: ExponentialMean):
        self.sampler = config.sampler
        self.hyper = config.hyper
        self.seeds = SeedPrior.none()
        self._state = state
        self.mean = mean
        self._beta: tuple[SamplerState, torch.Tensor] | None = None  # (state, its beta)

    @property
    def state(self) -> SamplerState:
        return self._state

    @property
    def theta(self) -> torch.Tensor:
        return self._state.theta

    @property
    def beta(self) -> torch.Tensor:
        if self._beta is None or self._beta[0] is not self._state:
            theta = self._state.theta
            self._beta = (self._state, theta / theta.sum(dim=1, keepdim=True))
        return self._beta[1]

    @property
    def beta_mean(self) -> torch.Tensor:
        """A tensor of its own after the first step: later steps leave it as it is."""
        return self.mean.value if self.mean.count else self.beta

    @property
    def whole_reads_cost_draws(self) -> bool:
        """No: the whole theta is current, and beta is its rows normalised."""
        return False

    def set_seeds(self, seeds: SeedPrior) -> None:
        """Step under alpha_kw = alpha + s_kw from now on (a (K, W) excess, kept while seeded)."""
        theta = self._state.theta
        K, W = theta.shape
        excess = seeds.excess((K, W), theta.dtype, theta.device) if len(seeds) else None
        self.seeds = seeds
        self.hyper = dataclasses.replace(self.hyper, seeded=excess)

    def update(
        self, minibatch: Minibatch, step_size: float, generator: torch.Generator
    ) -> StepInfo:
        """The sampler's step on the counts of every word; a non-finite result is refused and
        the chain left as it was."""
        topic_word = minibatch.topic_word(self.beta, minibatch.batch, self.theta.dtype)
        stats = MinibatchStatistics(topic_word=topic_word, scale=minibatch.scale)
        new_state, info = step(self.sampler, self._state, stats, self.hyper, step_size, generator)
        moving = [new_state.theta] + ([] if new_state.momentum is None else [new_state.momentum])
        if not all_finite(*moving):
            raise NonFiniteError(f"non-finite theta after step {self._state.step + 1}")
        self._state = new_state
        self.mean.add(self.beta)
        return info

    def top_words(self, n: int, which: Estimate) -> tuple[torch.Tensor, torch.Tensor]:
        weights, ids = torch.topk(self.beta_mean if which == "mean" else self.beta, k=n, dim=1)
        return ids, weights

    def sample_at(self, word_ids: torch.Tensor) -> torch.Tensor:
        return self.beta.gather(1, word_ids.to(self.theta.device))

    def remap(self, columns: ColumnMap, generator: torch.Generator) -> None:
        """Entering columns: theta ~ Gamma(alpha, 1), then (HMC samplers) momentum ~ N(0, 1),
        its stationary law whatever theta; the mean of beta carried by
        :func:`lda.sgmcmc.columns.remap_mean`."""
        theta, momentum = self._state.theta, self._state.momentum
        n_topics, entering = theta.shape[0], int(columns.entering.numel())
        fresh = prior_columns(self.hyper.alpha, n_topics, entering, generator, theta.dtype)
        new_momentum = None
        if momentum is not None:
            noise = torch.randn(
                (n_topics, entering), generator=generator, device=theta.device, dtype=theta.dtype
            )
            new_momentum = columns.apply(momentum, noise)
        self._state = SamplerState(
            theta=columns.apply(theta, fresh), momentum=new_momentum, step=self._state.step
        )
        remap_mean(self.mean, columns, self.beta)
        self.set_seeds(self.seeds.remap(columns.keep, columns.n_old))

    # --- the topic moves' row edits (Chain); each makes a new state, as a step does ---------

    def merge_rows(self, k: int, j: int, row: torch.Tensor, generator: torch.Generator) -> None:
        """theta_k + theta_j in row k, momentum (r_k + r_j) / sqrt(2) (N(0, 1) again, the
        pair's mean direction), the mean weighted by the rows' sums; row j restarted at
        ``row`` with a fresh momentum."""
        state = self._state
        sums = state.theta[[k, j]].to(torch.float64).sum(dim=1)  # (theta_k., theta_j.)
        theta = state.theta.clone()
        theta[k] += theta[j]
        theta[j] = row.to(theta.dtype)
        momentum = state.momentum
        if momentum is not None:
            momentum = momentum.clone()
            momentum[k] = (momentum[k] + momentum[j]) / math.sqrt(2.0)
            momentum[j] = _normal_row(momentum, generator)
        self._state = SamplerState(theta=theta, momentum=momentum, step=state.step)
        merge_mean_rows(self.mean, k, j, sums)
        restart_mean_row(self.mean, j, row)

    def restart_row(self, k: int, row: torch.Tensor, generator: torch.Generator) -> None:
        """Row k set to ``row`` with a fresh N(0, 1) momentum, its mean restarted there."""
        state = self._state
        theta = state.theta.clone()
        theta[k] = row.to(theta.device, theta.dtype)
        momentum = state.momentum
        if momentum is not None:
            momentum = momentum.clone()
            momentum[k] = _normal_row(momentum, generator)
        self._state = SamplerState(theta=theta, momentum=momentum, step=state.step)
        restart_mean_row(self.mean, k, row)

    def spread_row(
        self, k: int, receivers: torch.Tensor, row: torch.Tensor, generator: torch.Generator
    ) -> None:
        """Row k's counts given to ``receivers`` (their momenta kept, their means following),
        then row k restarted at ``row`` as :meth:`restart_row` does."""
        state = self._state
        theta = state.theta.clone()
        spread_with_mean(theta, self.mean, k, receivers, self.hyper.alpha)
        theta[k] = row.to(theta.device, theta.dtype)
        momentum = state.momentum
        if momentum is not None:
            momentum = momentum.clone()
            momentum[k] = _normal_row(momentum, generator)
        self._state = SamplerState(theta=theta, momentum=momentum, step=state.step)
        restart_mean_row(self.mean, k, row)

    def divide_row(
        self, k: int, free: int, fraction: torch.Tensor, generator: torch.Generator
    ) -> None:
        """Row k keeps ``fraction`` of theta_k and its momentum, row ``free`` the rest and a
        fresh N(0, 1) momentum (the pair's difference is new); the mean divided alike."""
        state = self._state
        theta = state.theta.clone()
        f = fraction.to(theta.device, theta.dtype)
        tiny = torch.finfo(theta.dtype).tiny  # a row of zeros would have no beta
        theta[free] = (theta[k] * (1 - f)).clamp_min(tiny)
        theta[k] = (theta[k] * f).clamp_min(tiny)
        momentum = state.momentum
        if momentum is not None:
            momentum = momentum.clone()
            momentum[free] = _normal_row(momentum, generator)
        self._state = SamplerState(theta=theta, momentum=momentum, step=state.step)
        divide_mean_rows(self.mean, k, free, fraction)

    def state_dict(self) -> dict[str, Any]:
        return {
            "theta": self._state.theta,
            "momentum": self._state.momentum,
            "step": self._state.step,
            "mean": self.mean.state_dict(),
            "lazy": None,
        }


def _normal_row(like: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """(W,) N(0, 1) in ``like``'s dtype and device: a momentum's stationary law, whatever theta."""
    return torch.randn(like.shape[1], generator=generator, device=like.device, dtype=like.dtype)


def is_lazy(config: LearnerConfig, device: torch.device) -> bool:
    """Whether the learner's chain is lazy: a sampler with lazy columns (SCIR) on the CPU,
    where a step costs O(K x the minibatch's words) instead of O(K x W)."""
    return SAMPLERS[config.sampler].lazy and device.type == "cpu"


def new_chain(
    config: LearnerConfig, device: torch.device, generator: torch.Generator, seed: int
) -> Chain:
    """A chain drawn from the prior with ``generator``; ``seed`` keys a lazy chain's reads."""
    dtype = getattr(torch, config.dtype)
    state = init_state(config.sampler, config.n_topics, config.n_words, generator, dtype)
    assert config.mean_decay is not None
    return _chain(config, device, seed, state, ExponentialMean(config.mean_decay))


def restore_chain(
    config: LearnerConfig, state: dict[str, Any], device: torch.device, seed: int
) -> Chain:
    """The chain of a learner checkpoint (:meth:`Chain.state_dict`'s keys), around the
    checkpoint's own matrices: no fresh K x W draw made only to be replaced. A lazy chain is
    restored as it was saved; a dense checkpoint of a lazy sampler (written on a GPU) restored
    on the CPU becomes a lazy chain from its theta."""
    assert config.mean_decay is not None
    mean = ExponentialMean(config.mean_decay)
    saved = state.get("mean")  # absent from checkpoints older than beta_mean: start afresh
    if saved is not None and saved["total"] is not None:
        mean.load_state_dict({**saved, "total": saved["total"].to(device)})
    lazy = state.get("lazy")
    if lazy is not None:
        dtype = getattr(torch, config.dtype)
        return LazySCIRChain(LazyChain.from_state_dict(lazy), dtype, seed, int(state["step"]), mean)
    momentum = state["momentum"]
    restored = SamplerState(
        theta=state["theta"].to(device),
        momentum=None if momentum is None else momentum.to(device),
        step=int(state["step"]),
    )
    return _chain(config, device, seed, restored, mean)


def _chain(
    config: LearnerConfig,
    device: torch.device,
    seed: int,
    state: SamplerState,
    mean: ExponentialMean,
) -> Chain:
    """The chain :func:`is_lazy` picks, starting from ``state``."""
    if not is_lazy(config, device):
        return DenseChain(config, state, mean)
    assert config.alpha is not None
    lazy = LazyChain(state.theta, config.alpha, mean.decay)
    return LazySCIRChain(lazy, getattr(torch, config.dtype), seed, state.step, mean)
