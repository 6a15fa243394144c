"""SCIR's lazy chain as a learner's chain (:class:`lda.sgmcmc.minibatch.Chain`), on the CPU.

A step brings the minibatch's columns up to date, runs the learner's Gibbs sweeps on beta
restricted to them (the words renumbered) and takes the exact transition there; the other
columns wait (:mod:`lda.sgmcmc.scir.lazy`). theta changes in place, so every read (beta, the
mean, top words) is computed once per step and dropped by the next one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import torch

from lda.batch import Batch
from lda.config import Estimate
from lda.sgmcmc.averaging import ExponentialMean
from lda.sgmcmc.columns import ColumnMap
from lda.sgmcmc.minibatch import (
    Minibatch,
    divide_mean_rows,
    merge_mean_rows,
    restart_mean_row,
    spread_with_mean,
)
from lda.sgmcmc.samplers import NonFiniteError, SamplerState, StepInfo
from lda.sgmcmc.scir.lazy import LazyChain
from lda.sgmcmc.scir.lazy_kernel import columns_of
from lda.sgmcmc.seeds import SeedPrior

_Read = TypeVar("_Read")
# A sample's top words are ranked among this many times n of the mean's top words.
SAMPLE_CANDIDATES = 4


class LazySCIRChain:
    """A :class:`LazyChain` with the learner's step counter and the reads it serves.

    ``seed`` keys the reads' draws of stale columns (with the step), so reading never moves
    the training chain and two reads at a step agree. ``mean`` is the dense chain's mean a
    checkpoint brought (one written where this sampler ran dense, on a GPU): written back as it
    came, while beta_mean is the lazy chain's own."""

    def __init__(
        self, lazy: LazyChain, dtype: torch.dtype, seed: int, step: int, mean: ExponentialMean
    ):
        self.lazy = lazy
        self.dtype = dtype  # of the reads
        self.seed = seed
        self.step = step
        self.mean = mean
        self.seeds = SeedPrior.none()
        self._reads: dict[str, object] = {}

    @property
    def state(self) -> SamplerState:
        return SamplerState(theta=self.lazy.theta, momentum=None, step=self.step)

    @property
    def theta(self) -> torch.Tensor:
        return self.lazy.theta

    @property
    def beta(self) -> torch.Tensor:
        """A draw of beta now: the stale columns drawn into the result only."""
        return self._read("beta", lambda: self.lazy.sample_beta(self._peek(), self.dtype))

    @property
    def beta_mean(self) -> torch.Tensor:
        """The exponential mean of theta over the steps, rows normalised."""
        return self._read("mean", lambda: self.lazy.mean_beta(self.dtype))

    @property
    def whole_reads_cost_draws(self) -> bool:
        """Yes: :attr:`beta` draws every column a step did not touch."""
        return True

    def _read(self, name: str, compute: Callable[[], _Read]) -> _Read:
        """A read computed once per step (a step drops every read, so no (K, W) result
        outlives the step it was read at)."""
        cached = self._reads.get(name)
        if cached is None:
            cached = compute()
            self._reads[name] = cached
        return cast(_Read, cached)

    def _peek(self) -> torch.Generator:
        """The reads' stream of this step."""
        return torch.Generator().manual_seed(self.seed * 1_000_003 + self.step)

    def set_seeds(self, seeds: SeedPrior) -> None:
        """Step under alpha_kw = alpha + s_kw from now on. A seeded word's column joins every
        step, so no stale column ever carries a seed: the lazy transitions of a column no
        minibatch touches (lda.sgmcmc.scir.lazy) hold for a prior of alpha alone."""
        self.seeds = seeds

    def update(
        self, minibatch: Minibatch, step_size: float, generator: torch.Generator
    ) -> StepInfo:
        """SCIR's step on the minibatch's words only. In a group the columns are the union of
        every rank's words (one all-reduce of a W-long mask) and only those columns' counts are
        summed. A non-finite step leaves the chain changed (it steps in place)."""
        lazy = self.lazy
        self._reads.clear()  # the chain is about to change in place
        batch, group = minibatch.batch, minibatch.group
        n_words = lazy.theta.shape[1]
        seeds = self.seeds
        if group is not None:
            mask = torch.zeros(n_words, dtype=torch.float32)
            mask[batch.words] = 1.0
            mask[seeds.words] = 1.0
            group.sum_(mask)
            columns = torch.nonzero(mask).squeeze(1)
            local = torch.searchsorted(columns, batch.words)
        elif len(seeds):
            columns = torch.unique(torch.cat([batch.words, seeds.words]))
            local = torch.searchsorted(columns, batch.words)
        else:
            columns_np, local_np = columns_of(batch.words.numpy(), n_words)
            columns, local = torch.from_numpy(columns_np), torch.from_numpy(local_np)
        rows = minibatch.rows  # the live slots: a free slot's row is held, not drawn
        lazy.catch_up(columns, generator, rows)
        beta = lazy.beta_columns(columns)
        mine = Batch(local, batch.offsets)
        if group is None:
            # The kernel's kept-sweep sums as they are, 1/kept folded into the scale.
            topic_word, kept = minibatch.expectations(beta, mine).topic_word_kept_sums(
                int(columns.numel())
            )
        else:
            # A group sums the counts in the chain's dtype: float32 halves what crosses the wire.
            topic_word, kept = minibatch.topic_word(beta, mine, self.dtype), 1
        if len(seeds):  # s_kw as pseudo-counts: a_kw = alpha + (N/n) (E[n_kw] + s_kw n/N)
            counts = topic_word.to(torch.float64)
            topic_word = counts + seeds.at_columns(columns, counts.shape[0], counts.dtype) * (
                kept / minibatch.scale
            )
        scale = minibatch.scale / kept
        if not lazy.advance(columns, topic_word, scale, step_size, generator, rows):
            raise NonFiniteError(f"non-finite theta after step {self.step + 1}")
        if lazy.due_for_sync():
            lazy.sync(generator)
        self.step += 1
        return StepInfo(reflected=0, zero_guarded=0)

    def top_words(self, n: int, which: Estimate) -> tuple[torch.Tensor, torch.Tensor]:
        """The mean ranked in one read of the chain, with no (K, W) result; the sample's top
        words among the mean's top SAMPLE_CANDIDATES x n: a full sample is O(K W) draws, and a
        word outside the mean's head is rarely in a sample's."""
        candidates, weights = self._top(n)
        if which == "mean":
            return candidates[:, :n], weights[:, :n]
        weights, order = torch.topk(self.sample_at(candidates), k=n, dim=1)
        return candidates.gather(1, order), weights

    def _top(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The mean ranked SAMPLE_CANDIDATES x n deep, in one pass per step that both
        rankings of :meth:`top_words` read."""
        deep = min(SAMPLE_CANDIDATES * n, self.lazy.theta.shape[1])
        return self._read(f"top_mean:{deep}", lambda: self.lazy.top_mean(deep, self.dtype))

    def sample_at(self, word_ids: torch.Tensor) -> torch.Tensor:
        """Without drawing the other columns (:meth:`LazyChain.sample_at`)."""
        return self.lazy.sample_at(word_ids, self._peek(), self.dtype)

    def remap(self, columns: ColumnMap, generator: torch.Generator) -> None:
        """The lazy chain's own move (:meth:`LazyChain.remap`); a dense mean a checkpoint
        brought is of the old vocabulary and starts over."""
        self._reads.clear()
        self.lazy.remap(columns, generator)
        self.seeds = self.seeds.remap(columns.keep, columns.n_old)
        if self.mean.count:
            self.mean = ExponentialMean(self.mean.decay)

    # --- the topic moves' row edits (Chain): in place, so every read is dropped -----------
    # SCIR has no momentum: ``generator`` is not drawn from. A dense mean a checkpoint brought
    # is edited as the dense chain edits its own.

    def merge_rows(self, k: int, j: int, row: torch.Tensor, generator: torch.Generator) -> None:
        """Row j added into row k, then restarted at ``row`` (:meth:`LazyChain.merge_rows`)."""
        self._reads.clear()
        sums = self.lazy.theta[[k, j]].to(torch.float64).sum(dim=1)  # (theta_k., theta_j.)
        self.lazy.merge_rows(k, j, row)
        merge_mean_rows(self.mean, k, j, sums)
        restart_mean_row(self.mean, j, row)

    def spread_row(
        self, k: int, receivers: torch.Tensor, row: torch.Tensor, generator: torch.Generator
    ) -> None:
        """Row k's counts given to ``receivers``, then restarted at ``row``
        (:meth:`LazyChain.spread_row`)."""
        self._reads.clear()
        if self.mean.total is not None:  # a checkpoint's dense mean follows as a dense chain's
            spread_with_mean(self.lazy.theta.clone(), self.mean, k, receivers, self.lazy.alpha)
        self.lazy.spread_row(k, receivers, row)
        restart_mean_row(self.mean, k, row)

    def restart_row(self, k: int, row: torch.Tensor, generator: torch.Generator) -> None:
        """Row k set to ``row``, its average restarted there (:meth:`LazyChain.restart_row`)."""
        self._reads.clear()
        self.lazy.restart_row(k, row)
        restart_mean_row(self.mean, k, row)

    def divide_row(
        self, k: int, free: int, fraction: torch.Tensor, generator: torch.Generator
    ) -> None:
        """Row k divided with row ``free`` by ``fraction`` (:meth:`LazyChain.divide_row`)."""
        self._reads.clear()
        self.lazy.divide_row(k, free, fraction)
        divide_mean_rows(self.mean, k, free, fraction)

    def state_dict(self) -> dict[str, Any]:
        return {
            "theta": self.lazy.theta,
            "momentum": None,
            "step": self.step,
            "mean": self.mean.state_dict(),
            "lazy": self.lazy.state_dict(),
        }
