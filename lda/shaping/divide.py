"""A topic divided in two, the reverse of a merge's sum: the split the topic shaper makes
(docs/model.md, "Divide: a split that keeps the topic's history"). Undone as every move is
(lda.shaping.moves.Undo)."""

from __future__ import annotations

import torch

from lda.model import StreamingLDA
from lda.sgmcmc.averaging import ExponentialMean
from lda.sgmcmc.samplers import SamplerState
from lda.sgmcmc.scir.chain import LazySCIRChain
from lda.shaping.moves import (
    Undo,
    _check_topic,
    _check_unseeded,
    _dense,
    _normal_row,
    _recount_stale,
    _snapshot,
)


def divide(
    model: StreamingLDA,
    k: int,
    fraction: torch.Tensor,
    free_slot: int,
    generator: torch.Generator,
) -> Undo:
    """Topic ``k`` divided in two, the reverse of a merge: row k keeps ``fraction`` ((W,) in
    [0, 1]) of each theta_kw, the free slot takes the rest, so the two rows add up to the row
    before; their averages are divided alike and gamma_k is shared in proportion to the two
    rows' sums. A seeded ``k`` keeps its seeds; the free slot must be unseeded."""
    _check_topic(model, k)
    _check_topic(model, free_slot)
    if k == free_slot:
        raise ValueError(f"the free slot must differ from topic {k}")
    _check_unseeded(model, free_slot, "born into")
    f = torch.as_tensor(fraction, dtype=torch.float64).reshape(-1).cpu()
    if f.numel() != model.config.n_words or not bool(((f >= 0) & (f <= 1)).all()):
        raise ValueError("fraction must hold one value in [0, 1] per word")
    undo = _snapshot(model, [k, free_slot])
    chain = model.chain
    if isinstance(chain, LazySCIRChain):
        lazy = chain.lazy
        chain._reads.clear()
        fk = f.to(lazy.theta.device, lazy.theta.dtype)
        lazy.theta[free_slot] = _tiny_floor(lazy.theta[k] * (1 - fk))
        lazy.theta[k] = _tiny_floor(lazy.theta[k] * fk)
        ft = f.to(lazy.total.device, lazy.total.dtype)
        lazy.total[free_slot] = lazy.total[k] * (1 - ft)
        lazy.total[k] = lazy.total[k] * ft
        _recount_stale(lazy, [k, free_slot])
        _divide_mean(chain.mean, k, free_slot, f)
    else:
        dense = _dense(model)
        state = dense.state
        theta = state.theta.clone()
        fk = f.to(theta.device, theta.dtype)
        theta[free_slot] = _tiny_floor(theta[k] * (1 - fk))
        theta[k] = _tiny_floor(theta[k] * fk)
        momentum = state.momentum
        if momentum is not None:  # each half a fresh N(0, 1): the pair's difference is new
            momentum = momentum.clone()
            momentum[free_slot] = _normal_row(momentum, generator)
        dense._state = SamplerState(theta=theta, momentum=momentum, step=state.step)
        _divide_mean(dense.mean, k, free_slot, f)
    sums = model.chain.theta[[k, free_slot]].to(torch.float64).sum(dim=1)
    gamma = model.prior.gamma.clone()
    if model.prior.learn:
        pair = float(gamma[k])
        share = float(sums[0] / sums.sum())
        floor = model.prior.schedule.floor
        gamma[k] = max(pair * share, floor)
        gamma[free_slot] = max(pair * (1.0 - share), floor)
    else:
        gamma[free_slot] = gamma[k]
    model.prior.gamma = gamma
    return undo


def _tiny_floor(row: torch.Tensor) -> torch.Tensor:
    return row.clamp_min(torch.finfo(row.dtype).tiny)


def _divide_mean(mean: ExponentialMean, k: int, j: int, fraction: torch.Tensor) -> None:
    """A dense mean of beta divided as the row was: each half renormalised."""
    if mean.total is None:
        return
    row = mean.total[k].to(torch.float64)
    f = fraction.to(row.device)
    for slot, part in ((j, row * (1 - f)), (k, row * f)):
        part = part.clamp_min(torch.finfo(torch.float64).tiny)
        mean.total[slot] = (part / part.sum() * row.sum()).to(mean.total.dtype)
