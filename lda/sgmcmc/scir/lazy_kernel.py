"""The lazy SCIR chain's column kernels (numba, CPU): catch-up, step, reads (lda.sgmcmc.scir.lazy).

The chain keeps theta word-major, (W, K): a minibatch's columns are rows of K contiguous values,
so the catch-up, the step and the beta handed to the Gibbs sweeps read and write whole cache
lines, and beta arrives at the sparse kernel already transposed (no gather). Every coordinate
(k, w) draws from its own counter-based stream (lda.sgmcmc.scir.transition_kernel.stream of
stream_index(k, key_w), key_w the column's stream key), so the draws do not depend on the
layout, the thread count, the order columns are visited in, or where a vocabulary change moved
the column; the topics' row sums are summed over a fixed number of column chunks in a fixed
order for the same reason. The kernels take the chain as one :class:`ChainArrays`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from lda.sgmcmc.scir.transition_kernel import cir, cir_constants, cir_given, stream

# Column chunks whose row-sum changes are summed separately, then in chunk order: fixed, so
# the sums do not depend on the thread count.
CHUNKS = 16


class ChainArrays(NamedTuple):
    """The lazy chain as its kernels take it (numba passes a NamedTuple as one argument): the
    arrays are the chain's own storage, so a kernel that writes them moves the chain; the
    scalars are its clocks at the call (lda.sgmcmc.scir.lazy.LazyChain.arrays)."""

    theta: np.ndarray  # (W, K) float64 or float32: column w as of time column_time[w]
    total: np.ndarray  # (W, K) the exponential mean's running total as of step column_step[w]
    row_stale: np.ndarray  # (K,) float64 sum_w (theta_wk - alpha) e^(t_w)
    column_time: np.ndarray  # (W,) float64 t_w
    column_step: np.ndarray  # (W,) int64 s_w
    column_mark: np.ndarray  # (W,) float64 A_w
    column_key: np.ndarray  # (W,) int64: keys column w's streams, whatever its index
    key_stride: int  # the chain's W when its keys began (see stream_index)
    time: float  # T since the last sync
    steps: int  # s since the last sync
    mark: float  # A_s
    decay: float  # the mean's decay per step
    alpha: float
    weight: float  # the mean's total weight


@numba.njit(cache=True, inline="always")
def stream_index(k: int, column: int, stride: int, n_topics: int) -> int:
    """The stream of coordinate (k, column key): k * stride + key for the keys a chain began
    with (its W; the streams of every chain from before keys), then the entering columns' keys
    past all of those, K at a time, so no two coordinates share a stream."""
    if column < stride:
        return k * stride + column
    return n_topics * stride + (column - stride) * n_topics + k


@numba.njit(cache=True)
def columns_of(words: np.ndarray, n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct word ids of ``words``, sorted; each token's index among them): a
    minibatch's columns and its words renumbered, in O(T + W) (torch.unique would sort)."""
    seen = np.zeros(n_words, dtype=np.int64)
    for j in range(words.shape[0]):
        seen[words[j]] = 1
    count = 0
    for w in range(n_words):
        if seen[w]:
            seen[w] = count
            count += 1
        else:
            seen[w] = -1
    columns = np.empty(count, dtype=np.int64)
    for w in range(n_words):
        if seen[w] >= 0:
            columns[seen[w]] = w
    local = np.empty(words.shape[0], dtype=np.int64)
    for j in range(words.shape[0]):
        local[j] = seen[words[j]]
    return columns, local


@numba.njit(cache=True, inline="always")
def _catch_up_factors(
    t_w: float, s_w: int, a_w: float, time: float, steps: int, mark: float, decay: float
) -> tuple[float, float, float, float]:
    """A column's (elapsed time, decay^(steps since), the mean's drift weight, e^t_w): see
    lda.sgmcmc.scir.lazy for the formula of the mean's conditional path."""
    elapsed = time - t_w
    lag = steps - s_w
    grown = math.exp(t_w)
    if decay == 0.0:  # the mean is the last sample: its conditional mean now
        if lag == 0:
            return elapsed, 1.0, 0.0, grown
        return elapsed, 0.0, math.exp(-elapsed), grown
    return elapsed, decay**lag, grown * decay**steps * (mark - a_w), grown


@numba.njit(cache=True, inline="always")
def _mean_now(
    total: float, theta: float, decay_power: float, drift: float, alpha: float, weight: float
) -> float:
    """A coordinate's mean of theta now, from its running total and value at its column's last
    touch (the conditional mean path for the steps since; see lda.sgmcmc.scir.lazy)."""
    return (
        decay_power * total + alpha * (1.0 - decay_power) + (float(theta) - alpha) * drift
    ) / weight


@numba.njit(cache=True, inline="always")
def _chunk(c: int, n: int) -> tuple[int, int]:
    """Chunk c's range of n items (CHUNKS near-equal chunks)."""
    return c * n // CHUNKS, (c + 1) * n // CHUNKS


@numba.njit(cache=True)
def _add_chunks(change: np.ndarray, row_stale: np.ndarray) -> None:
    """row_stale += the chunks' changes, in chunk order."""
    for c in range(change.shape[0]):
        for k in range(change.shape[1]):
            row_stale[k] += change[c, k]


@numba.njit(parallel=True, cache=True)
def catch_up_columns(
    chain: ChainArrays,  # theta, total and row_stale updated on ``columns``, which are stamped
    columns: np.ndarray,  # (m,) int64 word ids
    key: np.uint64,
    moved: np.ndarray,  # (K,) bool: the rows drawn; the others' theta is held
) -> None:
    """Bring ``columns`` to the current time: each coordinate of a ``moved`` row an exact CIR
    transition towards Gamma(alpha) over its elapsed time (no data touched it meanwhile), the
    mean's total caught up with the conditional mean path (a held row's: its value), and the
    row sums' stale part re-based."""
    theta, total, alpha = chain.theta, chain.total, chain.alpha
    column_time, column_step, column_mark = chain.column_time, chain.column_step, chain.column_mark
    time, steps, mark, decay = chain.time, chain.steps, chain.mark, chain.decay
    n_topics = theta.shape[1]
    m = columns.shape[0]
    now = math.exp(time)
    change = np.zeros((CHUNKS, n_topics))
    for c in numba.prange(CHUNKS):
        lo, hi = _chunk(c, m)
        delta = change[c]
        for j in range(lo, hi):
            w = columns[j]
            elapsed, decay_power, drift, grown = _catch_up_factors(
                column_time[w], column_step[w], column_mark[w], time, steps, mark, decay
            )
            if elapsed <= 0.0:  # up to date already
                continue
            scale, mix = cir_constants(elapsed)
            x_row = theta[w]
            t_row = total[w]
            column = chain.column_key[w]
            for k in range(n_topics):
                x0 = float(x_row[k])
                if not moved[k]:  # a held row (a free slot's): no draw, its value the path
                    t_row[k] = decay_power * t_row[k] + x0 * (1.0 - decay_power)
                    delta[k] += (x0 - alpha) * (now - grown)
                    continue
                x1, _ = cir_given(
                    x0,
                    alpha,
                    scale,
                    mix,
                    stream(key, stream_index(k, column, chain.key_stride, n_topics)),
                )
                x_row[k] = x1
                x1 = float(x_row[k])  # as stored (float32 rounds)
                t_row[k] = (
                    decay_power * t_row[k] + alpha * (1.0 - decay_power) + (x0 - alpha) * drift
                )
                delta[k] += (x1 - alpha) * now - (x0 - alpha) * grown
    _add_chunks(change, chain.row_stale)
    stamp(chain, columns)


@numba.njit(parallel=True, cache=True)
def advance_columns(
    chain: ChainArrays,  # theta, total and row_stale updated on ``columns``
    columns: np.ndarray,  # (m,) int64 word ids, all up to date
    word_topic: np.ndarray,  # (m, K) float64: the minibatch's sum_d E[n_dkw] on ``columns``
    scale: float,  # N / n
    h: float,
    now: float,  # e^T before the step
    after: float,  # e^(T + h)
    key: np.uint64,
    moved: np.ndarray,  # (K,) bool: the rows drawn; the others' theta is held
) -> int:
    """One SCIR step on the minibatch's columns: theta_wk of a ``moved`` row an exact CIR
    transition of time h towards Gamma(alpha + (N/n) E[n_kw]) (a held row keeps its value);
    the step's sample folded into the mean's total. The caller stamps the columns with the new
    time. Returns how many shapes or row sums were not finite (a non-finite gradient: the
    caller restores the state)."""
    theta, total, row_stale = chain.theta, chain.total, chain.row_stale
    alpha, decay = chain.alpha, chain.decay
    n_topics = theta.shape[1]
    m = columns.shape[0]
    c_h, mix = cir_constants(h)
    change = np.zeros((CHUNKS, n_topics))
    bad = np.zeros(CHUNKS, dtype=np.int64)
    for c in numba.prange(CHUNKS):
        lo, hi = _chunk(c, m)
        delta = change[c]
        for j in range(lo, hi):
            w = columns[j]
            x_row = theta[w]
            t_row = total[w]
            counts = word_topic[j]
            column = chain.column_key[w]
            for k in range(n_topics):
                x0 = float(x_row[k])
                if moved[k]:
                    a = alpha + scale * counts[k]
                    if not math.isfinite(a):
                        bad[c] += 1
                    x1, _ = cir_given(
                        x0,
                        a,
                        c_h,
                        mix,
                        stream(key, stream_index(k, column, chain.key_stride, n_topics)),
                    )
                    x_row[k] = x1
                    x1 = float(x_row[k])
                else:
                    x1 = x0
                t_row[k] = decay * t_row[k] + (1.0 - decay) * x1
                delta[k] += (x1 - alpha) * after - (x0 - alpha) * now
    _add_chunks(change, row_stale)
    n_bad = int(bad.sum())
    for k in range(n_topics):
        n_bad += not math.isfinite(row_stale[k])
    return n_bad


@numba.njit(parallel=True, cache=True)
def beta_columns(
    theta: np.ndarray,  # (W, K)
    columns: np.ndarray,  # (m,) int64
    row_sums: np.ndarray,  # (K,) float64
    floor: float,  # lda.sgmcmc.scir.transition.beta_floor
    out: np.ndarray,  # (m, K) float64
) -> None:
    """out[j] = theta[columns[j]] / row_sums, raised to ``floor``: the columns' beta, transposed
    (one contiguous row of K per word, as the sparse Gibbs kernel reads it)."""
    n_topics = theta.shape[1]
    inverse = 1.0 / row_sums
    for j in numba.prange(columns.shape[0]):
        x_row = theta[columns[j]]
        o_row = out[j]
        for k in range(n_topics):
            o_row[k] = max(float(x_row[k]) * inverse[k], floor)


@numba.njit(cache=True)
def stamp(chain: ChainArrays, columns: np.ndarray) -> None:
    """Record that ``columns`` are up to date at the chain's (time, steps, mark)."""
    for j in range(columns.shape[0]):
        w = columns[j]
        chain.column_time[w] = chain.time
        chain.column_step[w] = chain.steps
        chain.column_mark[w] = chain.mark


# Words per tile when a (W, K) chain is read into a (K, W) result: each tile reads TILE rows of
# K and writes K runs of TILE values.
TILE = 64


@numba.njit(parallel=True, cache=True)
def row_sums(theta: np.ndarray, shift: float, out: np.ndarray) -> None:
    """out[k] = sum_w (theta[w, k] + shift) in float64, for (W, K) ``theta`` (no temporary)."""
    n_words, n_topics = theta.shape
    rows = np.zeros((CHUNKS, n_topics))
    for c in numba.prange(CHUNKS):
        lo, hi = _chunk(c, n_words)
        row = rows[c]
        for w in range(lo, hi):
            x_row = theta[w]
            for k in range(n_topics):
                row[k] += float(x_row[k]) + shift
    for c in range(CHUNKS):
        for k in range(n_topics):
            out[k] += rows[c, k]


@numba.njit(parallel=True, cache=True)
def stale_sums(theta: np.ndarray, column_time: np.ndarray, alpha: float, out: np.ndarray) -> None:
    """out[k] = sum_w (theta[w, k] - alpha) e^column_time[w] in float64, for (W, K) ``theta``:
    the row sums' stale part with the columns' own clocks (a vocabulary change's re-count)."""
    n_words, n_topics = theta.shape
    rows = np.zeros((CHUNKS, n_topics))
    for c in numba.prange(CHUNKS):
        lo, hi = _chunk(c, n_words)
        row = rows[c]
        for w in range(lo, hi):
            grown = math.exp(column_time[w])
            x_row = theta[w]
            for k in range(n_topics):
                row[k] += (float(x_row[k]) - alpha) * grown
    for c in range(CHUNKS):
        for k in range(n_topics):
            out[k] += rows[c, k]


@numba.njit(parallel=True, cache=True)
def _scale_rows(out: np.ndarray, row: np.ndarray, floor: float) -> None:
    """out[k, :] = max(out[k, :] / row[k], floor) (a (K, W) result normalised per topic)."""
    for k in numba.prange(out.shape[0]):
        inverse = 1.0 / row[k]
        o_row = out[k]
        for w in range(out.shape[1]):
            o_row[w] = max(float(o_row[w]) * inverse, floor)


@numba.njit(parallel=True, cache=True)
def _mean_pass(
    chain: ChainArrays,  # read only
    rows: np.ndarray,  # (CHUNKS, K) float64 zeros: each chunk of words' sums of the mean
    out: np.ndarray | None,  # (W, K), any float dtype: the mean written (None: not written)
    best: np.ndarray | None,  # (CHUNKS, K, n) float64, -inf: each chunk's n largest (None: none)
    best_ids: np.ndarray | None,  # (CHUNKS, K, n) int64, -1: their words
) -> None:
    """The one read of the mean of theta that mean_beta and mean_top share: every column's
    running total brought to the current step (as catch_up_columns does) over the weight,
    summed per chunk of words, written out and ranked where asked, without changing the
    state. numba compiles a version for each choice of None, so a part not asked costs nothing."""
    total, theta, alpha, weight = chain.total, chain.theta, chain.alpha, chain.weight
    column_time, column_step, column_mark = chain.column_time, chain.column_step, chain.column_mark
    time, steps, mark, decay = chain.time, chain.steps, chain.mark, chain.decay
    n_words, n_topics = total.shape
    for c in numba.prange(CHUNKS):
        lo, hi = _chunk(c, n_words)
        row = rows[c]
        for w in range(lo, hi):
            _, decay_power, drift, _ = _catch_up_factors(
                column_time[w], column_step[w], column_mark[w], time, steps, mark, decay
            )
            t_row = total[w]
            x_row = theta[w]
            for k in range(n_topics):
                value = _mean_now(t_row[k], x_row[k], decay_power, drift, alpha, weight)
                row[k] += value
                if out is not None:
                    out[w, k] = value
                if best is not None and best_ids is not None:
                    _offer(best[c, k], best_ids[c, k], value, w)


@numba.njit(parallel=True, cache=True)
def mean_beta(
    chain: ChainArrays,  # read only
    normalise: bool,  # rows normalised and raised to ``floor`` (the served beta_mean)
    floor: float,
    out: np.ndarray,  # (W, K), any float dtype: word-major, as the chain
) -> None:
    """The mean of theta read without changing the state, word-major as the chain is kept
    (:func:`_mean_pass`), each topic normalised if asked (the served beta_mean), with no
    temporary."""
    n_words, n_topics = out.shape
    rows = np.zeros((CHUNKS, n_topics))
    _mean_pass(chain, rows, out, None, None)
    if normalise:
        inverse = 1.0 / rows.sum(axis=0)
        for w in numba.prange(n_words):
            o_row = out[w]
            for k in range(n_topics):
                o_row[k] = max(float(o_row[k]) * inverse[k], floor)


@numba.njit(parallel=True, cache=True)
def sample_beta(
    chain: ChainArrays,  # read only
    key: np.uint64,
    floor: float,  # lda.sgmcmc.scir.transition.beta_floor of ``out``'s dtype
    out: np.ndarray,  # (K, W), any float dtype: a draw of beta now
) -> None:
    """A draw of beta now, as (K, W): each stale column an exact CIR transition over its
    elapsed time (as catch_up_columns draws it, into ``out`` only), rows normalised, raised to
    ``floor``."""
    theta, column_time, time, alpha = chain.theta, chain.column_time, chain.time, chain.alpha
    n_words, n_topics = theta.shape
    tiles = (n_words + TILE - 1) // TILE
    rows = np.zeros((CHUNKS, n_topics))
    for c in numba.prange(CHUNKS):
        first, last = _chunk(c, tiles)
        row = rows[c]
        for tile in range(first, last):
            for w in range(tile * TILE, min(n_words, (tile + 1) * TILE)):
                elapsed = time - column_time[w]
                x_row = theta[w]
                column = chain.column_key[w]
                for k in range(n_topics):
                    x, _ = cir(
                        float(x_row[k]),
                        alpha,
                        elapsed,
                        stream(key, stream_index(k, column, chain.key_stride, n_topics)),
                    )
                    out[k, w] = x
                    row[k] += float(out[k, w])
    _scale_rows(out, rows.sum(axis=0), floor)


@numba.njit(parallel=True, cache=True)
def sample_at(
    chain: ChainArrays,  # read only
    key: np.uint64,
    word_ids: np.ndarray,  # (K, M) int64: the words of each topic to read
    row_sums: np.ndarray,  # (K,) float64 the normaliser (LazyChain.row_sums)
    floor: float,
    out: np.ndarray,  # (K, M) float64
) -> None:
    """A draw of beta now at (k, word_ids[k, i]) only: each value drawn exactly as sample_beta
    draws it under the same key, normalised by ``row_sums`` instead of the drawn rows' sums."""
    theta, column_time, time, alpha = chain.theta, chain.column_time, chain.time, chain.alpha
    n_topics = theta.shape[1]
    for k in numba.prange(n_topics):
        inverse = 1.0 / row_sums[k]
        for i in range(word_ids.shape[1]):
            w = word_ids[k, i]
            elapsed = time - column_time[w]
            column = chain.column_key[w]
            x, _ = cir(
                float(theta[w, k]),
                alpha,
                elapsed,
                stream(key, stream_index(k, column, chain.key_stride, n_topics)),
            )
            out[k, i] = max(x * inverse, floor)


@numba.njit(cache=True, inline="always")
def _beats(value: float, w: int, other: float, other_w: int) -> bool:
    """Ranked above: a larger value, or an equal one of a smaller word id."""
    return value > other or (value == other and w < other_w)


@numba.njit(cache=True, inline="always")
def _offer(values: np.ndarray, ids: np.ndarray, value: float, w: int) -> None:
    """Keep (``value``, word ``w``) among the best len(values) seen: a min-heap whose root
    (values[0], ids[0]) is the lowest ranked kept, replaced when beaten (empty slots hold id
    -1 and -inf)."""
    if not _beats(value, w, values[0], ids[0]):
        return
    n = values.shape[0]
    i = 0
    while True:  # sift the new entry down from the root
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and _beats(values[child], ids[child], values[child + 1], ids[child + 1]):
            child += 1  # the lower ranked child
        if not _beats(value, w, values[child], ids[child]):
            break
        values[i] = values[child]
        ids[i] = ids[child]
        i = child
    values[i] = value
    ids[i] = w


@numba.njit(parallel=True, cache=True)
def mean_top(
    chain: ChainArrays,  # read only
    out_values: np.ndarray,  # (K, n) float64: the mean's n largest theta values per topic
    out_ids: np.ndarray,  # (K, n) int64: their words, in no particular order
    out_rows: np.ndarray,  # (K,) float64: each topic's sum of the mean (its normaliser)
) -> None:
    """Each topic's n largest entries of the mean of theta (as mean_beta computes them), and
    the rows' sums, in one read of the chain with no (K, W) result: the served top words at
    any W. Of equal values the smaller word id is kept."""
    n_topics, n = out_values.shape
    best = np.full((CHUNKS, n_topics, n), -np.inf)
    best_ids = np.full((CHUNKS, n_topics, n), -1, dtype=np.int64)
    rows = np.zeros((CHUNKS, n_topics))
    _mean_pass(chain, rows, None, best, best_ids)
    for k in numba.prange(n_topics):
        values = np.full(n, -np.inf)
        ids = np.full(n, -1, dtype=np.int64)
        for c in range(CHUNKS):  # chunk order: earlier words first, so ties keep them
            for i in range(n):
                if best_ids[c, k, i] >= 0:
                    _offer(values, ids, best[c, k, i], best_ids[c, k, i])
        out_values[k] = values
        out_ids[k] = ids
        total_row = 0.0
        for c in range(CHUNKS):
            total_row += rows[c, k]
        out_rows[k] = total_row
