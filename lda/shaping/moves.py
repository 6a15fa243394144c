"""Topic moves as changes of the chain's state: merge, retire, birth and split (docs/model.md,
"Topic moves").

A move rewrites a few rows (topics) of the learner's state: theta, an HMC sampler's momentum,
the running average beta_mean is read from, and gamma_k when the prior is learned. K never
changes: a freed slot is redrawn from the prior and stays in the model until a birth reuses it;
which slots are live is the caller's bookkeeping. Each move returns an :class:`Undo` that puts
the rows back bit for bit. Pure: no global state, every draw from the caller's generator (the
learner's own generators are not touched).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from lda.model import StreamingLDA
from lda.sgmcmc.averaging import ExponentialMean
from lda.sgmcmc.chain import DenseChain
from lda.sgmcmc.samplers import SamplerState
from lda.sgmcmc.scir.chain import LazySCIRChain
from lda.sgmcmc.scir.lazy import LazyChain


@dataclass(frozen=True)
class _LazyColumns:
    """A lazy chain's columns as a birth found them, before it brought them up to date."""

    columns: torch.Tensor  # (m,) sorted word ids
    theta: torch.Tensor  # (K, m)
    total: torch.Tensor  # (K, m)
    time: torch.Tensor
    step: torch.Tensor
    mark: torch.Tensor


@dataclass(frozen=True)
class Undo:
    """The rows a move changed, as they were: :meth:`restore` puts them back exactly. Valid
    until the chain steps (a step moves every row; restoring then is refused): a trial with a
    burn-in restores the learner's whole state instead (docs/model.md, "Topic moves")."""

    rows: torch.Tensor  # (r,) int64 the topics the move wrote
    step: int  # the chain's step at the move
    theta: torch.Tensor  # (r, W)
    momentum: torch.Tensor | None  # (r, W): HMC samplers
    mean: torch.Tensor | None  # (r, W): the dense mean's or the lazy chain's running total
    carried_mean: torch.Tensor | None  # (r, W): a dense mean a checkpoint brought a lazy chain
    row_stale: torch.Tensor | None  # (K,): the lazy chain's
    columns: _LazyColumns | None  # the lazy chain's columns a birth brought up to date
    gamma: torch.Tensor  # (K,)

    def restore(self, model: StreamingLDA) -> None:
        """Put the model's state back as it was before the move."""
        if model.state.step != self.step:
            raise ValueError(
                f"the chain has stepped since the move (step {model.state.step}, "
                f"move at {self.step}): restore the learner's saved state instead"
            )
        chain = model.chain
        if isinstance(chain, LazySCIRChain):
            lazy = chain.lazy
            chain._reads.clear()
            if self.columns is not None:
                saved = self.columns
                lazy.theta[:, saved.columns] = saved.theta
                lazy.total[:, saved.columns] = saved.total
                lazy.column_time[saved.columns] = saved.time
                lazy.column_step[saved.columns] = saved.step
                lazy.column_mark[saved.columns] = saved.mark
            lazy.theta[self.rows] = self.theta
            assert self.mean is not None and self.row_stale is not None
            lazy.total[self.rows] = self.mean
            lazy.row_stale = self.row_stale.clone()
            if self.carried_mean is not None and chain.mean.total is not None:
                chain.mean.total[self.rows] = self.carried_mean
        else:
            dense = _dense(model)
            state = dense.state
            momentum = state.momentum
            if momentum is not None:
                assert self.momentum is not None
                momentum = _with_rows(momentum, self.rows, self.momentum)
            theta = _with_rows(state.theta, self.rows, self.theta)
            dense._state = SamplerState(theta=theta, momentum=momentum, step=state.step)
            if self.mean is not None and dense.mean.total is not None:
                dense.mean.total[self.rows.to(dense.mean.total.device)] = self.mean
        model.prior.gamma = self.gamma.clone()


def merge(model: StreamingLDA, k: int, j: int, generator: torch.Generator) -> Undo:
    """Topic ``k`` absorbs topic ``j``: theta_k <- theta_k + theta_j (the counts added),
    gamma_k <- gamma_k + gamma_j when the prior is learned; slot ``j`` is freed as
    :func:`retire` frees it (drawn with ``generator``). A seeded ``j`` is refused; a seeded
    ``k`` keeps its seeds."""
    _check_topic(model, k)
    _check_topic(model, j)
    if k == j:
        raise ValueError(f"cannot merge topic {k} into itself")
    _check_unseeded(model, j, "merged away")
    undo = _snapshot(model, [k, j])
    sums = model.chain.theta[[k, j]].to(torch.float64).sum(dim=1)  # (theta_k., theta_j.)
    fresh = _prior_row(model, j, generator)
    chain = model.chain
    if isinstance(chain, LazySCIRChain):
        lazy = chain.lazy
        chain._reads.clear()
        lazy.theta[k] += lazy.theta[j]
        lazy.total[k] += lazy.total[j]  # the mean of the summed path, column by column
        _lazy_restart(lazy, j, fresh)
        _recount_stale(lazy, [k, j])
        _merge_mean(chain.mean, k, j, sums)
        _restart_mean(chain.mean, j, fresh)
    else:
        dense = _dense(model)
        state = dense.state
        theta = state.theta.clone()
        theta[k] += theta[j]
        theta[j] = fresh.to(theta.dtype)
        momentum = state.momentum
        if momentum is not None:  # N(0, 1) stays N(0, 1): the pair's mean direction
            momentum = momentum.clone()
            momentum[k] = (momentum[k] + momentum[j]) / math.sqrt(2.0)
            momentum[j] = _normal_row(momentum, generator)
        dense._state = SamplerState(theta=theta, momentum=momentum, step=state.step)
        _merge_mean(dense.mean, k, j, sums)
        _restart_mean(dense.mean, j, fresh)
    gamma = model.prior.gamma.clone()
    if model.prior.learn:
        gamma[k] = gamma[k] + gamma[j]
    gamma[j] = model.prior.schedule.floor
    model.prior.gamma = gamma
    return undo


def retire(model: StreamingLDA, k: int, generator: torch.Generator) -> Undo:
    """Slot ``k`` redrawn from the prior: theta_kw ~ Gamma(alpha, 1) (a topic no data has
    touched), a fresh N(0, 1) momentum, its average restarted at the new row, gamma_k at the
    prior's floor, learned or fixed (a free slot takes next to no tokens). A seeded topic is
    refused."""
    _check_topic(model, k)
    _check_unseeded(model, k, "retired")
    undo = _snapshot(model, [k])
    fresh = _prior_row(model, k, generator)
    chain = model.chain
    if isinstance(chain, LazySCIRChain):
        chain._reads.clear()
        _lazy_restart(chain.lazy, k, fresh)
        _recount_stale(chain.lazy, [k])
        _restart_mean(chain.mean, k, fresh)
    else:
        _dense_rows(model, {k: fresh}, generator)
    gamma = model.prior.gamma.clone()
    gamma[k] = model.prior.schedule.floor
    model.prior.gamma = gamma
    return undo


def birth(model: StreamingLDA, k: int, counts: torch.Tensor, generator: torch.Generator) -> Undo:
    """A free slot ``k`` starts from ``counts`` ((W,) word counts on the chain's scale, (N/n)
    E[n_kw] of the n documents it is born from) plus the prior: the conditional law of a row
    with those counts (docs/model.md). gamma_k takes the live topics' mean gamma (the symmetric
    start under a fixed prior). A seeded slot is not free."""
    _check_topic(model, k)
    _check_unseeded(model, k, "born into")
    counts = _checked_counts(model, counts)
    undo = _birth_rows(model, {k: counts}, generator)
    gamma = model.prior.gamma.clone()
    gamma[k] = _live_gamma(model)
    model.prior.gamma = gamma
    return undo


def split(
    model: StreamingLDA,
    k: int,
    counts_a: torch.Tensor,
    counts_b: torch.Tensor,
    free_slot: int,
    generator: torch.Generator,
) -> Undo:
    """Topic ``k`` divided in two: ``k`` is born again from ``counts_a`` (its seeds, if any,
    stay in its prior), the free slot from ``counts_b``; gamma_k + gamma_free is shared in
    proportion to the two halves' counts (the reverse of a merge)."""
    _check_topic(model, k)
    _check_topic(model, free_slot)
    if k == free_slot:
        raise ValueError(f"the free slot must differ from topic {k}")
    _check_unseeded(model, free_slot, "born into")
    counts_a = _checked_counts(model, counts_a)
    counts_b = _checked_counts(model, counts_b)
    undo = _birth_rows(model, {k: counts_a, free_slot: counts_b}, generator)
    gamma = model.prior.gamma.clone()
    if not model.prior.learn:
        gamma[free_slot] = gamma[k]
    else:
        pair = gamma[k] + gamma[free_slot]
        share = float(counts_a.sum()) / float(counts_a.sum() + counts_b.sum())
        floor = model.prior.schedule.floor
        gamma[k] = (pair * share).clamp_min(floor)
        gamma[free_slot] = (pair * (1.0 - share)).clamp_min(floor)
    model.prior.gamma = gamma
    return undo


# --- the rows ------------------------------------------------------------------------------


def _birth_rows(
    model: StreamingLDA, born: dict[int, torch.Tensor], generator: torch.Generator
) -> Undo:
    """Rows drawn from their counts plus the prior. The lazy chain first brings the counted
    columns up to date (an exact transition of every row there), so that the born values hold
    now and not at a column's older clock, where a catch-up would relax them."""
    chain = model.chain
    counted = torch.zeros(model.config.n_words, dtype=torch.bool)
    for counts in born.values():
        counted |= counts.cpu() > 0
    columns = torch.nonzero(counted).squeeze(1)
    undo = _snapshot(model, list(born), columns if isinstance(chain, LazySCIRChain) else None)
    if isinstance(chain, LazySCIRChain):
        lazy = chain.lazy
        chain._reads.clear()
        lazy.catch_up(columns, generator)
        rows = {k: _count_row(model, k, counts, generator) for k, counts in born.items()}
        for k, row in rows.items():
            _lazy_restart(lazy, k, row)
            _restart_mean(chain.mean, k, row)
        _recount_stale(lazy, list(born))
    else:
        rows = {k: _count_row(model, k, counts, generator) for k, counts in born.items()}
        _dense_rows(model, rows, generator)
    return undo


def _dense_rows(
    model: StreamingLDA, rows: dict[int, torch.Tensor], generator: torch.Generator
) -> None:
    """The dense chain's rows set to ``rows``, each with a fresh N(0, 1) momentum and its
    average restarted there; a new state (a dense chain's states are never changed in place)."""
    dense = _dense(model)
    state = dense.state
    theta = state.theta.clone()
    for k, row in rows.items():
        theta[k] = row.to(theta.device, theta.dtype)
    momentum = state.momentum
    if momentum is not None:
        momentum = momentum.clone()
        for k in rows:
            momentum[k] = _normal_row(momentum, generator)
    dense._state = SamplerState(theta=theta, momentum=momentum, step=state.step)
    for k, row in rows.items():
        _restart_mean(dense.mean, k, row)


def _prior_row(model: StreamingLDA, k: int, generator: torch.Generator) -> torch.Tensor:
    """(W,) float64 theta_kw ~ Gamma(alpha_kw, 1): a row no data has touched."""
    shape = _alpha_row(model, k).to(generator.device)
    return _floored(model, torch._standard_gamma(shape, generator=generator))


def _count_row(
    model: StreamingLDA, k: int, counts: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """(W,) float64 a row given ``counts``. SCIR's target holds the counts in theta itself,
    theta_kw ~ Gamma(alpha_kw + c_w, 1); the other samplers' target keeps the row sum at
    Gamma(sum_w alpha_kw, 1) whatever the counts, independent of beta_k ~ Dirichlet(alpha_k +
    c), so the Gamma draws are normalised and scaled by one such row sum."""
    alpha = _alpha_row(model, k).to(generator.device)
    draws = torch._standard_gamma(alpha + counts.to(generator.device), generator=generator)
    if model.config.sampler == "scir":
        return _floored(model, draws)
    total = torch._standard_gamma(alpha.sum().reshape(1), generator=generator)
    draws = draws.clamp_min(torch.finfo(torch.float64).tiny)
    return _floored(model, draws / draws.sum() * total)


def _live_gamma(model: StreamingLDA) -> float:
    """A born topic's gamma_k: the live topics' mean (free slots sit at the floor), or the
    symmetric start under a fixed prior."""
    if not model.prior.learn:
        assert model.config.gamma is not None
        return float(model.config.gamma)
    gamma = model.prior.gamma
    live = gamma[gamma > model.prior.schedule.floor]
    return float((live if live.numel() else gamma).mean())


def _floored(model: StreamingLDA, row: torch.Tensor) -> torch.Tensor:
    """``row`` raised to the chain's smallest normal number: with a small alpha (1e-4) most
    Gamma(alpha) draws underflow to 0, and a row of zeros has no beta. The law moves by less
    than that number per coordinate."""
    return row.clamp_min(torch.finfo(model.chain.theta.dtype).tiny)


def _normal_row(like: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """(W,) N(0, 1) in ``like``'s dtype: a momentum's stationary law, whatever theta."""
    W = like.shape[1]
    return torch.randn(W, generator=generator, device=like.device, dtype=like.dtype)


def _alpha_row(model: StreamingLDA, k: int) -> torch.Tensor:
    """(W,) float64 alpha_kw = alpha + s_kw: row k's prior shapes, its seeds included."""
    assert model.config.alpha is not None
    row = torch.full((model.config.n_words,), model.config.alpha, dtype=torch.float64)
    seeds = model.seeds
    mine = seeds.topics == k
    row[seeds.words[mine]] += seeds.strength[mine]
    return row


# --- the averages --------------------------------------------------------------------------


def _merge_mean(mean: ExponentialMean, k: int, j: int, sums: torch.Tensor) -> None:
    """A dense mean of beta: the merged row's mean is the two means weighted by the rows' sums
    now (the weights of the merged sample, theta_k. beta_k + theta_j. beta_j over their sum)."""
    if mean.total is None:
        return
    a, b = float(sums[0]), float(sums[1])
    mean.total[k] = (a * mean.total[k] + b * mean.total[j]) / (a + b)


def _restart_mean(mean: ExponentialMean, k: int, theta_row: torch.Tensor) -> None:
    """A dense mean of beta restarted at row k's new beta (no history to average)."""
    if mean.total is None:
        return
    row = theta_row.to(mean.total.device, torch.float64)
    mean.total[k] = (mean.weight * row / row.sum()).to(mean.total.dtype)


def _lazy_restart(lazy: LazyChain, k: int, row: torch.Tensor) -> None:
    """Row k of the lazy chain set to ``row`` at every column's clock, and its running total
    restarted as if the row had held that value up to the column's last step: W_s theta_kw,
    W_s = 1 - decay^(steps then) the mean's weight at that step (zero before any step)."""
    lazy.theta[k] = row.to(lazy.theta.dtype)
    before = lazy.steps_total - lazy.steps  # steps taken before the last sync
    exponent = (before + lazy.column_step).to(torch.float64)
    weights = 1.0 - torch.pow(torch.tensor(lazy.decay, dtype=torch.float64), exponent)
    lazy.total[k] = (weights * lazy.theta[k].to(torch.float64)).to(lazy.total.dtype)


def _recount_stale(lazy: LazyChain, rows: list[int]) -> None:
    """The row sums' stale part, sum_w (theta_kw - alpha) e^(t_w), counted again on ``rows``."""
    grown = torch.exp(lazy.column_time)
    stale = lazy.row_stale.clone()
    for k in rows:
        stale[k] = ((lazy.theta[k].to(torch.float64) - lazy.alpha) * grown).sum()
    lazy.row_stale = stale


# --- checks and snapshots ------------------------------------------------------------------


def _snapshot(model: StreamingLDA, rows: list[int], columns: torch.Tensor | None = None) -> Undo:
    """What a move on ``rows`` (and, lazy, a catch-up of ``columns``) will change, copied."""
    index = torch.tensor(rows, dtype=torch.int64)
    chain = model.chain
    gamma = model.prior.gamma.clone()
    step = model.state.step
    if isinstance(chain, LazySCIRChain):
        lazy = chain.lazy
        saved = None
        if columns is not None:
            saved = _LazyColumns(
                columns=columns,
                theta=lazy.theta[:, columns].clone(),
                total=lazy.total[:, columns].clone(),
                time=lazy.column_time[columns].clone(),
                step=lazy.column_step[columns].clone(),
                mark=lazy.column_mark[columns].clone(),
            )
        carried = None if chain.mean.total is None else chain.mean.total[index].clone()
        return Undo(
            rows=index,
            step=step,
            theta=lazy.theta[index].clone(),
            momentum=None,
            mean=lazy.total[index].clone(),
            carried_mean=carried,
            row_stale=lazy.row_stale.clone(),
            columns=saved,
            gamma=gamma,
        )
    dense = _dense(model)
    device_index = index.to(dense.theta.device)
    momentum = dense.state.momentum
    total = dense.mean.total
    return Undo(
        rows=index,
        step=step,
        theta=dense.theta[device_index].clone(),
        momentum=None if momentum is None else momentum[device_index].clone(),
        mean=None if total is None else total[device_index].clone(),
        carried_mean=None,
        row_stale=None,
        columns=None,
        gamma=gamma,
    )


def _dense(model: StreamingLDA) -> DenseChain:
    chain = model.chain
    if not isinstance(chain, DenseChain):
        raise TypeError(f"topic moves know the dense and lazy chains, not {type(chain).__name__}")
    return chain


def _with_rows(matrix: torch.Tensor, rows: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """A copy of ``matrix`` with ``rows`` set to ``values``."""
    out = matrix.clone()
    out[rows.to(matrix.device)] = values
    return out


def _check_topic(model: StreamingLDA, k: int) -> None:
    K = model.config.n_topics
    if not 0 <= k < K:
        raise ValueError(f"topic {k} is outside [0, {K})")


def _check_unseeded(model: StreamingLDA, k: int, what: str) -> None:
    if bool((model.seeds.topics == k).any()):
        raise ValueError(f"topic {k} is seeded: a seeded topic is never {what}")


def _checked_counts(model: StreamingLDA, counts: torch.Tensor) -> torch.Tensor:
    """(W,) float64 CPU counts: finite, non-negative, not all zero."""
    counts = torch.as_tensor(counts).to(device="cpu", dtype=torch.float64).reshape(-1)
    W = model.config.n_words
    if counts.numel() != W:
        raise ValueError(f"counts have {counts.numel()} words for a vocabulary of {W}")
    if not bool(torch.isfinite(counts).all()) or bool((counts < 0).any()):
        raise ValueError("counts must be finite and non-negative")
    if not float(counts.sum()) > 0:
        raise ValueError("a birth needs some counts")
    return counts
