"""Topic moves as changes of the chain's state: merge and retire here, divide in
:mod:`lda.shaping.divide` (docs/model.md, "Topic moves").

A move rewrites a few rows (topics) of the learner's state: theta, an HMC sampler's momentum,
the running average beta_mean is read from, and gamma_k when the prior is learned. The chain
edits its own rows (:meth:`lda.sgmcmc.minibatch.Chain.merge_rows`, ``restart_row``,
``divide_row``); a move draws the new values, checks its arguments and sets gamma. K never
changes: a freed slot is redrawn from the prior and stays in the model until a division reuses
it; which slots are live is the caller's bookkeeping. Pure: no global state, every draw from the
caller's generator (the learner's own generators are not touched).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from lda.draws import standard_gamma
from lda.model import StreamingLDA


def merge(model: StreamingLDA, k: int, j: int, generator: torch.Generator) -> None:
    """Topic ``k`` absorbs topic ``j``: theta_k <- theta_k + theta_j (the counts added),
    gamma_k <- gamma_k + gamma_j when the prior is learned; slot ``j`` is freed as
    :func:`retire` frees it (drawn with ``generator``). A seeded ``j`` is refused; a seeded
    ``k`` keeps its seeds."""
    check_topic(model, k)
    check_topic(model, j)
    if k == j:
        raise ValueError(f"cannot merge topic {k} into itself")
    check_unseeded(model, j, "merged away")
    fresh = _prior_row(model, j, generator)
    model.chain.merge_rows(k, j, fresh, generator)
    gamma = model.prior.gamma.clone()
    if model.prior.learn:
        gamma[k] = gamma[k] + gamma[j]
    gamma[j] = model.prior.schedule.floor
    model.prior.gamma = gamma


def retire(
    model: StreamingLDA, k: int, generator: torch.Generator, receivers: Sequence[int] = ()
) -> None:
    """Slot ``k`` redrawn from the prior: theta_kw ~ Gamma(alpha, 1) (a topic no data has
    touched), a fresh N(0, 1) momentum, its average restarted at the new row, gamma_k at the
    prior's floor, learned or fixed (a free slot takes next to no tokens). Its counts go to the
    live topics ``receivers`` first, word by word in proportion to their theta_jw, as the
    retire's score sends its tokens (lda.sgmcmc.minibatch.spread_counts); with none given they
    are dropped. A seeded topic is refused."""
    check_topic(model, k)
    check_unseeded(model, k, "retired")
    for j in receivers:
        check_topic(model, j)
    row = _prior_row(model, k, generator)
    if receivers:
        rows = torch.tensor(list(receivers), dtype=torch.int64)
        model.chain.spread_row(k, rows, row, generator)
    else:
        model.chain.restart_row(k, row, generator)
    gamma = model.prior.gamma.clone()
    gamma[k] = model.prior.schedule.floor
    model.prior.gamma = gamma


def check_topic(model: StreamingLDA, k: int) -> None:
    """A topic index of the model's slots, or a ValueError."""
    K = model.config.n_topics
    if not 0 <= k < K:
        raise ValueError(f"topic {k} is outside [0, {K})")


def check_unseeded(model: StreamingLDA, k: int, what: str) -> None:
    """A ValueError if topic ``k`` is seeded: its seeds would be lost by the move ``what``."""
    if bool((model.seeds.topics == k).any()):
        raise ValueError(f"topic {k} is seeded: a seeded topic is never {what}")


def _prior_row(model: StreamingLDA, k: int, generator: torch.Generator) -> torch.Tensor:
    """(W,) float64 theta_kw ~ Gamma(alpha_kw, 1): a row no data has touched, raised to the
    chain's smallest normal number (with a small alpha, 1e-4, most Gamma(alpha) draws underflow
    to 0, and a row of zeros has no beta; the law moves by less than that number)."""
    shape = _alpha_row(model, k).to(generator.device)
    draws = standard_gamma(shape, generator)
    return draws.clamp_min(torch.finfo(model.chain.theta.dtype).tiny)


def _alpha_row(model: StreamingLDA, k: int) -> torch.Tensor:
    """(W,) float64 alpha_kw = alpha + s_kw: row k's prior shapes, its seeds included."""
    assert model.config.alpha is not None
    row = torch.full((model.config.n_words,), model.config.alpha, dtype=torch.float64)
    seeds = model.seeds
    mine = seeds.topics == k
    row[seeds.words[mine]] += seeds.strength[mine]
    return row
