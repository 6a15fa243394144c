"""What a learner's chain takes and what it offers: one step's :class:`Minibatch`, the
:class:`Chain` interface that :class:`lda.model.StreamingLDA` steps and reads, and the edits of a
dense mean's rows that both chains' topic moves make.

Both chains (:mod:`lda.sgmcmc.chain`, :mod:`lda.sgmcmc.scir.chain`) import these from here, so
neither imports the other for them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import torch

from lda.batch import Batch
from lda.config import Estimate
from lda.parallel import Reducer
from lda.sgmcmc.averaging import ExponentialMean
from lda.sgmcmc.columns import ColumnMap
from lda.sgmcmc.samplers import SamplerState, StepInfo
from lda.sgmcmc.seeds import SeedPrior

if TYPE_CHECKING:
    from lda.gibbs import GibbsExpectations


@dataclass(frozen=True)
class Minibatch:
    """One step's data as a chain takes it: the documents, the learner's Gibbs sweeps to run on
    them (a chain picks the beta, and may renumber the words to its columns), the ranks whose
    counts are summed, the gradient's scale N/n, and the rows that hold a topic: the others'
    expected counts are zero, and a chain may leave them as they are (a free slot's row is
    rewritten before it holds a topic again)."""

    batch: Batch  # on the chain's device
    expectations: Callable[[torch.Tensor, Batch], GibbsExpectations]  # (beta, documents)
    group: Reducer | None  # the ranks that share the step (None: this rank alone)
    scale: float  # N / n
    rows: torch.Tensor | None = None  # (L,) int64 the live slots; None: every row

    def topic_word(self, beta: torch.Tensor, batch: Batch, dtype: torch.dtype) -> torch.Tensor:
        """(K, beta's columns) sum over the minibatch's documents (every rank's, in a group) of
        E[n_dkw]: this rank's sweeps of ``batch`` on ``beta``, in ``dtype``, summed over ranks."""
        topic_word = self.expectations(beta, batch).topic_word(beta.shape[1]).to(dtype)
        if self.group is not None:
            # In place on the storage, whichever way round it is laid out.
            self.group.sum_(topic_word if topic_word.is_contiguous() else topic_word.T)
        return topic_word


class Chain(Protocol):
    """A learner's chain. Reads of beta are the learner's to keep but not to modify; a step
    that raises NonFiniteError leaves a dense chain unchanged, a lazy one changed (it steps in
    place: the caller restores a checkpoint)."""

    @property
    def state(self) -> SamplerState:
        """theta (K, W), the momentum (HMC samplers) and the steps taken."""
        ...

    @property
    def theta(self) -> torch.Tensor:
        """(K, W) the chain's theta (a lazy chain's stale columns as of their last step)."""
        ...

    @property
    def beta(self) -> torch.Tensor:
        """(K, W) topic-word probabilities of the current sample."""
        ...

    @property
    def beta_mean(self) -> torch.Tensor:
        """(K, W) the exponential mean of the samples, rows summing to 1 (the current sample
        before the first step)."""
        ...

    @property
    def whole_reads_cost_draws(self) -> bool:
        """Whether reading the whole sample (:attr:`beta`) draws the columns a step did not
        touch: a pass over K x W with a random draw each, not a division."""
        ...

    @property
    def seeds(self) -> SeedPrior:
        """The seed words' priors the chain steps under (none: alpha everywhere)."""
        ...

    def set_seeds(self, seeds: SeedPrior) -> None:
        """Step under alpha_kw = alpha + s_kw from the next step on."""
        ...

    def update(
        self, minibatch: Minibatch, step_size: float, generator: torch.Generator
    ) -> StepInfo:
        """One step on the minibatch's expected counts."""
        ...

    def top_words(self, n: int, which: Estimate) -> tuple[torch.Tensor, torch.Tensor]:
        """((K, n) word ids, their weights) in the ``which`` estimate, most probable first
        (n at most W)."""
        ...

    def sample_at(self, word_ids: torch.Tensor) -> torch.Tensor:
        """(K, M) the current sample of beta at (k, word_ids[k, i])."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """The learner checkpoint's chain keys: theta, momentum, step, mean and lazy."""
        ...

    def remap(self, columns: ColumnMap, generator: torch.Generator) -> None:
        """Move to a new vocabulary: kept columns carried, entering ones drawn with
        ``generator`` from the law of a column no data has touched (docs/model.md, "When the
        vocabulary changes")."""
        ...

    # The topic moves' edits of a few rows (lda.shaping, docs/model.md "Topic moves"): the
    # chain changes its own state, so a move touches none of it. A fresh momentum (HMC
    # samplers) is drawn from ``generator``, never from the learner's generators.

    def merge_rows(self, k: int, j: int, row: torch.Tensor, generator: torch.Generator) -> None:
        """Row j added into row k (theta, momentum and the running average of the pair's sum),
        then row j restarted at ``row`` as :meth:`restart_row` does: a merge."""
        ...

    def restart_row(self, k: int, row: torch.Tensor, generator: torch.Generator) -> None:
        """Row k set to ``row`` ((W,) theta) as a new row: a fresh N(0, 1) momentum and its
        running average restarted there (no history to average)."""
        ...

    def divide_row(
        self, k: int, free: int, fraction: torch.Tensor, generator: torch.Generator
    ) -> None:
        """Row k divided by ``fraction`` ((W,) float64 in [0, 1]): k keeps that share of each
        theta_kw and of its average, row ``free`` takes the rest and a fresh momentum."""
        ...

    def spread_row(
        self, k: int, receivers: torch.Tensor, row: torch.Tensor, generator: torch.Generator
    ) -> None:
        """Row k's counts given to the rows ``receivers`` word by word (:func:`spread_counts`),
        their averages following, then row k restarted at ``row`` as :meth:`restart_row` does:
        a retire whose tokens go where the retire's score sends them."""
        ...


# --- a retired row's counts given to the other rows ------------------------------------------

SPREAD_COLUMNS = 2048  # columns a spread edits at once: its temporaries are (K, 2048)


def spread_counts(
    theta: torch.Tensor,
    k: int,
    receivers: torch.Tensor,
    alpha: float,
    riders: Sequence[tuple[torch.Tensor, torch.Tensor]] = (),
    weights: torch.Tensor | None = None,
) -> torch.Tensor:
    """In place: row k's counts over the prior, (theta_kw - alpha)^+, added to the rows
    ``receivers`` word by word in the shares theta_jw / sum_receivers theta_jw (each word's
    topic given the word alone, the topics' sizes included; evenly where none holds the word).
    Each (matrix, amount) of ``riders`` ((K, W), (W,)) has ``amount`` added to the same rows in
    the same shares. Row k is left as it was. Returns (R,) float64: each receiver's added
    counts weighed by ``weights`` ((W,), ones if None), so that a caller's row sums follow."""
    if bool((receivers == k).any()):
        raise ValueError(f"row {k} cannot receive its own counts")
    mask = torch.zeros(theta.shape[0], dtype=theta.dtype, device=theta.device)
    mask[receivers.to(theta.device)] = 1.0  # a mask, not an index: the blocks stay views
    given = (theta[k] - alpha).clamp_min(0)
    tiny = torch.finfo(theta.dtype).tiny
    even = mask[:, None] / float(mask.sum())
    added = torch.zeros(theta.shape[0], dtype=torch.float64, device=theta.device)
    n_words = theta.shape[1]
    for a in range(0, n_words, SPREAD_COLUMNS):
        b = min(a + SPREAD_COLUMNS, n_words)
        block = theta[:, a:b]  # a view: the writes below land in theta
        part = block * mask[:, None]
        column = part.sum(dim=0, keepdim=True)  # a word no receiver holds is shared evenly
        share = torch.where(column > 0, part / column.clamp_min(tiny), even)
        gift = share * given[a:b]
        block += gift
        w = None if weights is None else weights[a:b].to(theta.device, torch.float64)
        added += (gift.to(torch.float64) * (1.0 if w is None else w)).sum(dim=1)
        for matrix, amount in riders:
            matrix[:, a:b] += share.to(matrix.device, matrix.dtype) * amount[a:b]
    rows = receivers.to(added.device)
    return added[rows].cpu()


# --- a dense mean's rows under the topic moves ------------------------------------------------


def merge_mean_rows(mean: ExponentialMean, k: int, j: int, sums: torch.Tensor) -> None:
    """A dense mean of beta: the merged row's mean is the two means weighted by the rows' sums
    ``sums`` = (theta_k., theta_j.) now (the weights of the merged sample, theta_k. beta_k +
    theta_j. beta_j over their sum)."""
    if mean.total is None:
        return
    a, b = float(sums[0]), float(sums[1])
    mean.total[k] = (a * mean.total[k] + b * mean.total[j]) / (a + b)


def restart_mean_row(mean: ExponentialMean, k: int, theta_row: torch.Tensor) -> None:
    """A dense mean of beta restarted at row k's new beta (no history to average)."""
    if mean.total is None:
        return
    row = theta_row.to(mean.total.device, torch.float64)
    mean.total[k] = (mean.weight * row / row.sum()).to(mean.total.dtype)


def spread_with_mean(
    theta: torch.Tensor, mean: ExponentialMean, k: int, receivers: torch.Tensor, alpha: float
) -> None:
    """:func:`spread_counts`, a dense mean of beta following: each receiver's mean, weighed by
    its row's sum, takes row k's, weighed by k's and less the prior's part, in the receiver's
    shares of each word, and is normalised again (as :func:`merge_mean_rows` weighs a
    merge)."""
    if mean.total is None:
        spread_counts(theta, k, receivers, alpha)
        return
    total = mean.total
    sums = theta.to(torch.float64).sum(dim=1).to(total.device, total.dtype)
    scaled = total * sums[:, None]  # the means at their rows' sizes: theta's running totals
    given = (scaled[k] - mean.weight * alpha).clamp_min(0)  # less the prior's part
    spread_counts(theta, k, receivers, alpha, [(scaled, given)])
    rows = receivers.to(total.device)
    part = scaled[rows]
    total[rows] = part * (mean.weight / part.sum(dim=1, keepdim=True))


def divide_mean_rows(mean: ExponentialMean, k: int, j: int, fraction: torch.Tensor) -> None:
    """A dense mean of beta divided as row k was (k keeps ``fraction``, j the rest): each half
    renormalised to the row's sum."""
    if mean.total is None:
        return
    row = mean.total[k].to(torch.float64)
    f = fraction.to(row.device)
    for slot, part in ((j, row * (1 - f)), (k, row * f)):
        part = part.clamp_min(torch.finfo(torch.float64).tiny)
        mean.total[slot] = (part / part.sum() * row.sum()).to(mean.total.dtype)
