"""SCIR with lazy columns: a step costs O(K x the minibatch's words), not O(K x W).

A word the minibatch does not contain has a_kw = alpha, and CIR transitions of one a compose
(times add), so its column can be left alone and brought up to date in one exact draw when it
is next touched or read (docs/samplers.md, "Lazy columns"). What is exact and what is not:

* theta: exact in law. A column's value after any sequence of steps, touched or not, has the
  law the dense SCIR step gives it.
* The row sums theta_k. that normalise beta for the Gibbs sweeps between syncs: the columns
  brought up to date count exactly, the stale ones by their conditional mean given their last
  value (alpha + (theta_0 - alpha) e^-elapsed), tracked in O(K) per step. Exact after a sync.
* The served mean: the exponential mean of theta over steps (rows normalised when read), where
  a stale column contributes its conditional mean path instead of its unobserved values (a
  Rao-Blackwellised average of the same quantity).

Times, step counts and the mean's accumulator are kept relative to the last sync, which brings
every column up to date and re-bases them (every ``SYNC_EVERY`` steps, or when the exponentials
would leave float64's range), so a long stream never overflows.
"""

from __future__ import annotations

import math
from dataclasses import InitVar, dataclass, field
from typing import Any

import numpy as np
import torch

from lda.sgmcmc.columns import ColumnMap, prior_columns
from lda.sgmcmc.minibatch import spread_counts
from lda.sgmcmc.scir import lazy_kernel
from lda.sgmcmc.scir.transition import beta_floor

# Re-base before e^T or decay^-s could reach e^LIMIT (float64 holds e^709).
_EXPONENT_LIMIT = 200.0
SYNC_EVERY = 1000  # steps between syncs at most (each is one O(K x W) pass)


def _word_major(matrix: torch.Tensor) -> torch.Tensor:
    """A (K, W) matrix as a view of contiguous (W, K) storage (a copy only if it is not)."""
    return matrix.T.contiguous().T


def _remap_vector(
    columns: ColumnMap, old: torch.Tensor, fill: float | int | torch.Tensor
) -> torch.Tensor:
    """A per-column vector carried to the new columns, entering ones set to ``fill``."""
    out = old.new_empty(columns.n_new)
    out[columns.kept] = old[columns.sources]
    out[columns.entering] = fill  # a Python scalar keeps its float64 precision
    return out


def _key(generator: torch.Generator) -> np.uint64:
    """A 64-bit key for the counter-based draws, from the caller's generator."""
    value = int(torch.randint(0, 2**62, (1,), generator=generator, device=generator.device))
    return np.uint64(value)


@dataclass
class LazyChain:
    """SCIR's chain with per-column clocks. Column w of ``theta`` holds its value at time
    ``column_time[w]`` (since the last sync); ``total`` the exponential mean's running total as
    of step ``column_step[w]``. Both are (K, W) views of word-major (W, K) storage, so that a
    word's K values are contiguous for the column kernels (lda.sgmcmc.scir.lazy_kernel)."""

    theta: torch.Tensor  # (K, W), CPU, float64 or float32; stored word-major
    alpha: float
    decay: float  # the mean's decay per step, in [0, 1)
    total: torch.Tensor = field(init=False)
    weight: float = 0.0  # the mean's total weight, 1 - decay^steps
    steps_total: int = 0  # steps since the chain began (the mean's count)
    time: float = 0.0  # T since the last sync
    steps: int = 0  # steps since the last sync
    mark: float = 0.0  # A_s = (1 - decay) sum_{j <= s} decay^-j e^-T_j since the last sync
    column_time: torch.Tensor = field(init=False)  # (W,) float64
    column_step: torch.Tensor = field(init=False)  # (W,) int64
    column_mark: torch.Tensor = field(init=False)  # (W,) float64
    row_stale: torch.Tensor = field(init=False)  # (K,) float64: sum_w (theta_kw - alpha) e^t_w
    # (W,) int64 keys of the columns' random streams, carried when a vocabulary change moves a
    # column, so its draws do not depend on its index; entering columns take fresh keys.
    column_key: torch.Tensor = field(init=False)
    next_key: int = field(init=False)  # the next entering column's key
    key_stride: int = field(init=False)  # W when the keys began (lazy_kernel.stream_index)
    # A restored chain's running total (K, W), taken as it is when word-major; None: zeros.
    restored_total: InitVar[torch.Tensor | None] = None

    def __post_init__(self, restored_total: torch.Tensor | None) -> None:
        if self.theta.device.type != "cpu":
            raise ValueError("the lazy SCIR chain runs on the CPU")
        if not 0.0 <= self.decay < 1.0:
            raise ValueError(f"decay must be in [0, 1), got {self.decay}")
        n_words = self.theta.shape[1]
        self.theta = _word_major(self.theta)
        if restored_total is None:
            self.total = torch.zeros_like(self.theta.T).T
        else:
            self.total = _word_major(restored_total)
        self.column_time = torch.zeros(n_words, dtype=torch.float64)
        self.column_step = torch.zeros(n_words, dtype=torch.int64)
        self.column_mark = torch.zeros(n_words, dtype=torch.float64)
        self.column_key = torch.arange(n_words, dtype=torch.int64)
        self.next_key = n_words
        self.key_stride = n_words  # keys below it read the streams of chains from before keys
        self.row_stale = self._stale_sums()

    def _stale_sums(self) -> torch.Tensor:
        """(K,) float64 sum_w (theta_kw - alpha): the stale part with every clock at 0."""
        out = torch.zeros(self.theta.shape[0], dtype=torch.float64)
        lazy_kernel.row_sums(self._stored(self.theta), -self.alpha, out.numpy())
        return out

    # --- reads ---------------------------------------------------------------------------

    def row_sums(self) -> torch.Tensor:
        """(K,) float64 theta_k.: exact for up-to-date columns, conditional means for stale."""
        n_words = self.theta.shape[1]
        return self.alpha * n_words + math.exp(-self.time) * self.row_stale

    def beta_columns(self, columns: torch.Tensor) -> torch.Tensor:
        """(K, m) float64 beta on ``columns`` (brought up to date first by the caller), a view
        of (m, K) contiguous rows: the sparse Gibbs kernel's layout, taken without a gather."""
        out = torch.empty(columns.numel(), self.theta.shape[0], dtype=torch.float64)
        lazy_kernel.beta_columns(
            self._stored(self.theta),
            columns.numpy(),
            self.row_sums().numpy(),
            beta_floor(torch.float64),
            out.numpy(),
        )
        return out.T

    def mean_theta(self) -> torch.Tensor:
        """(K, W) float64 the exponential mean of theta over the steps (stale columns by their
        conditional mean path), rows not normalised; the state is not changed."""
        if self.steps_total == 0:
            return self.theta.double()
        return self._mean(torch.float64, normalise=False)

    def mean_beta(self, dtype: torch.dtype) -> torch.Tensor:
        """(K, W) the served mean, rows normalised, in ``dtype``; the state is not changed."""
        if self.steps_total == 0:
            theta = self.theta.to(dtype)
            return theta / theta.sum(dim=1, keepdim=True)
        return self._mean(dtype, normalise=True)

    def _mean(self, dtype: torch.dtype, normalise: bool) -> torch.Tensor:
        """(K, W), a view of word-major storage like the chain's own (no transposed copy)."""
        out = torch.empty(self.theta.shape[1], self.theta.shape[0], dtype=dtype)
        lazy_kernel.mean_beta(self.arrays(), normalise, beta_floor(dtype), out.numpy())
        return out.T

    def sample_beta(self, generator: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
        """(K, W) a draw of beta now: the stale columns drawn into the result only."""
        out = torch.empty(self.theta.shape, dtype=dtype)
        lazy_kernel.sample_beta(self.arrays(), _key(generator), beta_floor(dtype), out.numpy())
        return out

    @staticmethod
    def _stored(matrix: torch.Tensor) -> np.ndarray:
        """The (W, K) storage of a (K, W) word-major view, for the kernels."""
        return matrix.T.numpy()

    def top_mean(self, n: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """((K, n) word ids, their weights in the served mean) of each topic's n most probable
        words, largest first (equal weights: smaller id first), in one read of the chain: the
        (K, W) mean is never formed. A topic whose mean is not finite gets NaN weights."""
        n_topics, n_words = self.theta.shape
        n = min(n, n_words)
        if self.steps_total == 0:
            theta = self.theta.double()
            values, ids = torch.topk(theta, n, dim=1)
            rows = theta.sum(dim=1)
        else:
            values_np = np.empty((n_topics, n))
            ids_np = np.empty((n_topics, n), dtype=np.int64)
            rows_np = np.empty(n_topics)
            lazy_kernel.mean_top(self.arrays(), values_np, ids_np, rows_np)
            order = np.lexsort((ids_np, -values_np), axis=-1)
            values = torch.from_numpy(np.take_along_axis(values_np, order, axis=-1))
            ids = torch.from_numpy(np.take_along_axis(ids_np, order, axis=-1))
            rows = torch.from_numpy(rows_np)
        weights = (values / rows[:, None]).clamp(min=beta_floor(dtype))
        weights[~torch.isfinite(rows)] = float("nan")  # a topic whose mean is not finite
        return ids, weights.to(dtype)

    def sample_at(
        self, word_ids: torch.Tensor, generator: torch.Generator, dtype: torch.dtype
    ) -> torch.Tensor:
        """(K, M) a draw of beta now at (k, word_ids[k, i]): the values :meth:`sample_beta`
        would draw there from the same generator state, normalised by :meth:`row_sums` (the
        stale columns by their conditional mean: the normaliser the Gibbs sweeps use between
        syncs) instead of by a draw of every column. O(K M), not O(K W)."""
        out = np.empty(tuple(word_ids.shape))
        lazy_kernel.sample_at(
            self.arrays(),
            _key(generator),
            word_ids.to(torch.int64).contiguous().numpy(),
            self.row_sums().numpy(),
            beta_floor(dtype),
            out,
        )
        return torch.from_numpy(out).to(dtype)

    def arrays(self) -> lazy_kernel.ChainArrays:
        """The chain as the kernels take it: its own storage (a kernel that writes it moves
        the chain) and its clocks now."""
        return lazy_kernel.ChainArrays(
            theta=self._stored(self.theta),
            total=self._stored(self.total),
            row_stale=self.row_stale.numpy(),
            column_time=self.column_time.numpy(),
            column_step=self.column_step.numpy(),
            column_mark=self.column_mark.numpy(),
            column_key=self.column_key.numpy(),
            key_stride=int(self.key_stride),
            time=float(self.time),
            steps=int(self.steps),
            mark=float(self.mark),
            decay=float(self.decay),
            alpha=float(self.alpha),
            weight=float(self.weight),
        )

    # --- moves ---------------------------------------------------------------------------

    def catch_up(
        self,
        columns: torch.Tensor | None,
        generator: torch.Generator,
        rows: torch.Tensor | None = None,
    ) -> None:
        """Bring ``columns`` (sorted word ids; None: all) to the current time, exactly, on
        ``rows`` (topic slots; None: all). A row left out is held: its theta stays as it is,
        its mean follows that value (for a free slot's row, which holds no topic and is
        rewritten before it holds one)."""
        ids = torch.arange(self.theta.shape[1]) if columns is None else columns
        lazy_kernel.catch_up_columns(
            self.arrays(),
            ids.numpy(),
            _key(generator),
            self._moved(rows),
        )

    def _moved(self, rows: torch.Tensor | None) -> np.ndarray:
        """The kernels' (K,) bool mask of the rows drawn: ``rows``, or every row."""
        moved = np.ones(self.theta.shape[0], dtype=np.bool_)
        if rows is not None:
            moved[:] = False
            moved[rows.to("cpu", torch.int64).numpy()] = True
        return moved

    def advance(
        self,
        columns: torch.Tensor,
        topic_word: torch.Tensor,
        scale: float,
        h: float,
        generator: torch.Generator,
        rows: torch.Tensor | None = None,
    ) -> bool:
        """One SCIR step of time ``h`` on ``columns`` (up to date: :meth:`catch_up` first),
        with the minibatch's (K, m) expected counts on them and the scale N/n, on ``rows``
        (None: all; a row left out is held, as in :meth:`catch_up`). Returns whether
        everything stayed finite."""
        if h <= 0.0:
            raise ValueError(f"SCIR's step size must be positive, got {h}")
        before = self.time
        bad = lazy_kernel.advance_columns(
            self.arrays(),
            columns.numpy(),
            topic_word.T.to(torch.float64).contiguous().numpy(),
            scale,
            h,
            math.exp(before),
            math.exp(before + h),
            _key(generator),
            self._moved(rows),
        )
        self.time += h
        self.steps += 1
        self.steps_total += 1
        if self.decay > 0.0:
            self.mark += (1.0 - self.decay) * self.decay ** (-self.steps) * math.exp(-self.time)
        self.weight = self.decay * self.weight + (1.0 - self.decay)
        lazy_kernel.stamp(self.arrays(), columns.numpy())
        return bad == 0

    def due_for_sync(self) -> bool:
        """Whether the clocks should be re-based now (range of e^T and decay^-s, or count)."""
        decay_exponent = 0.0 if self.decay == 0.0 else -self.steps * math.log(self.decay)
        return (
            self.time > _EXPONENT_LIMIT
            or decay_exponent > _EXPONENT_LIMIT
            or self.steps >= SYNC_EVERY
        )

    def sync(self, generator: torch.Generator) -> None:
        """Bring every column up to date and re-base the clocks at the current time."""
        self.catch_up(None, generator)
        self.time, self.steps, self.mark = 0.0, 0, 0.0
        self.column_time.zero_()
        self.column_step.zero_()
        self.column_mark.zero_()
        self.row_stale = self._stale_sums()

    def remap(self, columns: ColumnMap, generator: torch.Generator) -> None:
        """Move to a new vocabulary. Kept columns keep their value, clocks, mean total and
        stream key, so a kept column is caught up later exactly as it would have been without
        the change; an entering column starts up to date now at a Gamma(alpha, 1) draw (a CIR
        process's stationary law towards Gamma(alpha) with no data), its mean total at that
        value, and a fresh stream key. The row sums' stale part is re-counted."""
        if columns.reorders_only:
            fresh = None
        else:
            n_topics, entering = self.theta.shape[0], int(columns.entering.numel())
            fresh = prior_columns(self.alpha, n_topics, entering, generator, self.theta.dtype)
        self.theta = _word_major(columns.apply(self.theta, fresh))
        self.total = _word_major(
            columns.apply(self.total, None if fresh is None else self.weight * fresh)
        )
        keys = torch.arange(self.next_key, self.next_key + int(columns.entering.numel()))
        self.next_key += int(keys.numel())
        self.column_time = _remap_vector(columns, self.column_time, self.time)
        self.column_step = _remap_vector(columns, self.column_step, self.steps)
        self.column_mark = _remap_vector(columns, self.column_mark, self.mark)
        self.column_key = _remap_vector(columns, self.column_key, keys)
        if fresh is not None:  # the same columns reordered leave every row's sum as it was
            self.row_stale = torch.zeros(self.theta.shape[0], dtype=torch.float64)
            lazy_kernel.stale_sums(
                self._stored(self.theta),
                self.column_time.numpy(),
                self.alpha,
                self.row_stale.numpy(),
            )

    # --- the topic moves' row edits (lda.shaping; docs/model.md, "Topic moves") ----------

    def merge_rows(self, k: int, j: int, row: torch.Tensor) -> None:
        """Row j added into row k at each column's clock, the running totals added too (the
        mean of the summed path, column by column); row j then restarted at ``row``."""
        self.theta[k] += self.theta[j]
        self.total[k] += self.total[j]
        self._restart(j, row)
        self._recount_stale([k, j])

    def spread_row(self, k: int, receivers: torch.Tensor, row: torch.Tensor) -> None:
        """Row k's counts given to the rows ``receivers`` at each column's clock
        (lda.sgmcmc.minibatch.spread_counts), its running total over the prior's part going
        with them in the same shares; row k then restarted at ``row``."""
        prior = self._column_weights() * self.alpha  # the prior's part of a running total
        moved = (self.total[k].to(torch.float64) - prior).clamp_min(0).to(self.total.dtype)
        added = spread_counts(
            self.theta, k, receivers, self.alpha, [(self.total, moved)], torch.exp(self.column_time)
        )
        self._restart(k, row)
        stale = self.row_stale.clone()
        stale[receivers] += added  # sum_w (theta_jw - alpha) e^(t_w) grows by what j took
        self.row_stale = stale
        self._recount_stale([k])

    def restart_row(self, k: int, row: torch.Tensor) -> None:
        """Row k set to ``row`` ((W,) theta) at every column's clock, its total restarted."""
        self._restart(k, row)
        self._recount_stale([k])

    def divide_row(self, k: int, free: int, fraction: torch.Tensor) -> None:
        """Row k keeps ``fraction`` ((W,) in [0, 1]) of each theta_kw and of its running total,
        row ``free`` takes the rest: the two add up to the row before (values that underflow
        raised to the dtype's smallest normal number)."""
        f = fraction.to(self.theta.device, self.theta.dtype)
        tiny = torch.finfo(self.theta.dtype).tiny
        self.theta[free] = (self.theta[k] * (1 - f)).clamp_min(tiny)
        self.theta[k] = (self.theta[k] * f).clamp_min(tiny)
        ft = fraction.to(self.total.device, self.total.dtype)
        self.total[free] = self.total[k] * (1 - ft)
        self.total[k] = self.total[k] * ft
        self._recount_stale([k, free])

    def _restart(self, k: int, row: torch.Tensor) -> None:
        """Row k set to ``row``, its running total restarted as if the row had held that value
        up to the column's last step: W_s theta_kw, W_s = 1 - decay^(steps then) the mean's
        weight at that step (zero before any step)."""
        self.theta[k] = row.to(self.theta.dtype)
        weights = self._column_weights()
        self.total[k] = (weights * self.theta[k].to(torch.float64)).to(self.total.dtype)

    def _column_weights(self) -> torch.Tensor:
        """(W,) float64 W_s = 1 - decay^(steps then): the mean's weight at each column's last
        step (zero before any step)."""
        before = self.steps_total - self.steps  # steps taken before the last sync
        exponent = (before + self.column_step).to(torch.float64)
        return 1.0 - torch.pow(torch.tensor(self.decay, dtype=torch.float64), exponent)

    def _recount_stale(self, rows: list[int]) -> None:
        """The row sums' stale part, sum_w (theta_kw - alpha) e^(t_w), counted again on
        ``rows``."""
        grown = torch.exp(self.column_time)
        stale = self.row_stale.clone()
        for k in rows:
            stale[k] = ((self.theta[k].to(torch.float64) - self.alpha) * grown).sum()
        self.row_stale = stale

    # --- checkpoints ---------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            name: getattr(self, name)
            for name in (
                "theta", "alpha", "decay", "total", "weight", "steps_total", "time", "steps",
                "mark", "column_time", "column_step", "column_mark", "row_stale", "column_key",
                "next_key", "key_stride",
            )
        }  # fmt: skip

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> LazyChain:
        """The chain of :meth:`state_dict`, its matrices the state's own storage (a loaded
        checkpoint's; copied only if not word-major): no (K, W) zeros made to be replaced."""
        chain = cls(
            state["theta"],
            float(state["alpha"]),
            float(state["decay"]),
            restored_total=state["total"],
        )
        for name, value in state.items():
            if name not in ("theta", "total"):
                setattr(chain, name, value)
        return chain
