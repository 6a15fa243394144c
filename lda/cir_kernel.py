"""Exact CIR transitions compiled for the CPU (numba), for SCIR's lazy step (docs/samplers.md).

A coordinate theta >= 0 following dtheta = (a - theta) dt + sqrt(2 theta) dW for a time h moves
to c Gamma(a + P, 1) with c = 1 - e^-h and P ~ Poisson(theta e^-h / c): an exact draw, whatever
h. Randomness is counter-based (splitmix64 of a key and a coordinate's index), so a draw does
not depend on the thread count or the order coordinates are visited in, and a whole step is
reproducible from one 64-bit key taken from the caller's generator.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TWO_POW_53 = 9007199254740992.0
# Below this Poisson mean, inversion by sequential search (one uniform, ~lambda steps); above,
# Hoermann's PTRS transformed rejection (numpy's choice of method and threshold).
_PTRS_FROM = 10.0


@numba.njit(cache=True, inline="always")
def _mix(z: np.uint64) -> np.uint64:
    """splitmix64's finaliser: a bijection of 64-bit words with good avalanche."""
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, inline="always")
def stream(key: np.uint64, index: int) -> np.uint64:
    """The start of coordinate ``index``'s random stream under ``key``."""
    return _mix(key ^ (np.uint64(index) * _GOLDEN + np.uint64(1)))


@numba.njit(cache=True, inline="always")
def _uniform(state: np.uint64) -> tuple[float, np.uint64]:
    """A uniform in (0, 1) and the stream's next state."""
    x = _mix(state)
    return ((x >> np.uint64(11)) + 0.5) / _TWO_POW_53, state + _GOLDEN


@numba.njit(cache=True, inline="always")
def _normal(state: np.uint64) -> tuple[float, np.uint64]:
    """A standard normal (Marsaglia's polar method: no trigonometry) and the next state."""
    while True:
        u1, state = _uniform(state)
        u2, state = _uniform(state)
        v1 = 2.0 * u1 - 1.0
        v2 = 2.0 * u2 - 1.0
        s = v1 * v1 + v2 * v2
        if 0.0 < s < 1.0:
            return v1 * math.sqrt(-2.0 * math.log(s) / s), state


@numba.njit(cache=True)
def poisson(lam: float, state: np.uint64) -> tuple[float, np.uint64]:
    """A Poisson(lam) draw (as a float: lam may exceed int64's exact range of interest)."""
    if lam <= 0.0:
        return 0.0, state
    if lam < _PTRS_FROM:
        u, state = _uniform(state)
        p = math.exp(-lam)
        cdf = p
        k = 0.0
        while u > cdf and p > 0.0:
            k += 1.0
            p *= lam / k
            cdf += p
        return k, state
    # PTRS (Hoermann 1993), as numpy's random_poisson_ptrs.
    slam = math.sqrt(lam)
    loglam = math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2.0)
    while True:
        u, state = _uniform(state)
        v, state = _uniform(state)
        u -= 0.5
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            return k, state
        if k < 0.0 or (us < 0.013 and v > us):
            continue
        if math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b) <= (
            -lam + k * loglam - math.lgamma(k + 1.0)
        ):
            return k, state


@numba.njit(cache=True)
def _gamma_at_least_one(shape: float, state: np.uint64) -> tuple[float, np.uint64]:
    """Gamma(shape, 1) for shape >= 1 (Marsaglia & Tsang 2000)."""
    d = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x, state = _normal(state)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u, state = _uniform(state)
        if u < 1.0 - 0.0331 * x * x * x * x:
            return d * v, state
        if math.log(u) < 0.5 * x * x + d * (1.0 - v + math.log(v)):
            return d * v, state


@numba.njit(cache=True)
def gamma(shape: float, state: np.uint64) -> tuple[float, np.uint64]:
    """Gamma(shape, 1) for shape > 0; below 1 as Gamma(shape + 1) U^(1/shape), with the power
    taken in log space: for tiny shapes the draw underflows to 0, which is the law in floating
    point (the uniform is drawn first, so a certain underflow skips the Gamma draw)."""
    if shape >= 1.0:
        return _gamma_at_least_one(shape, state)
    u, state = _uniform(state)
    log_power = math.log(u) / shape
    if log_power < -800.0:  # e^-800 * (a Gamma(<2) draw) is 0 in float64
        return 0.0, state
    g, state = _gamma_at_least_one(shape + 1.0, state)
    return g * math.exp(log_power), state


@numba.njit(cache=True)
def cir(theta: float, a: float, h: float, state: np.uint64) -> tuple[float, np.uint64]:
    """theta after time h of dtheta = (a - theta) dt + sqrt(2 theta) dW: c Gamma(a + P), c =
    1 - e^-h, P ~ Poisson(theta e^-h / c). h <= 0 leaves theta as it is."""
    if h <= 0.0:
        return theta, state
    c = -math.expm1(-h)
    p, state = poisson(max(theta, 0.0) * math.exp(-h) / c, state)
    g, state = gamma(a + p, state)
    return c * g, state


@numba.njit(parallel=True, cache=True)
def cir_array(
    theta: np.ndarray,  # (m,) float64, updated in place
    a: np.ndarray,  # (m,) float64
    h: float,
    key: np.uint64,
) -> None:
    """theta[i] <- one exact transition of time h towards Gamma(a[i]), coordinate i's stream
    under ``key`` (the tests' entry point; the lazy step uses the column kernels below)."""
    for i in numba.prange(theta.shape[0]):
        theta[i], _ = cir(theta[i], a[i], h, stream(key, i))


@numba.njit(cache=True)
def columns_of(words: np.ndarray, n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct word ids of ``words``, sorted; each token's index among them): a
    minibatch's columns and its words renumbered, in O(T + W) (torch.unique sorts, ~50x
    slower here)."""
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
    lda.lazy for the formula of the mean's conditional path."""
    elapsed = time - t_w
    lag = steps - s_w
    grown = math.exp(t_w)
    if decay == 0.0:  # the mean is the last sample: its conditional mean now
        if lag == 0:
            return elapsed, 1.0, 0.0, grown
        return elapsed, 0.0, math.exp(-elapsed), grown
    return elapsed, decay**lag, grown * decay**steps * (mark - a_w), grown


@numba.njit(parallel=True, cache=True)
def catch_up_columns(
    theta: np.ndarray,  # (K, W) float64 or float32, updated in place on ``columns``
    total: np.ndarray,  # (K, W) the exponential mean's running total, updated on ``columns``
    row_stale: np.ndarray,  # (K,) float64, sum_w (theta_kw - alpha) e^(t_w), updated
    columns: np.ndarray,  # (m,) int64 word ids
    column_time: np.ndarray,  # (W,) float64 t_w, set to ``time`` on ``columns``
    column_step: np.ndarray,  # (W,) int64 s_w, set to ``steps``
    column_mark: np.ndarray,  # (W,) float64 A_w, set to ``mark``
    time: float,  # T since the last sync
    steps: int,  # s since the last sync
    mark: float,  # A_s
    decay: float,
    alpha: float,
    key: np.uint64,
) -> None:
    """Bring ``columns`` to the current time: each coordinate an exact CIR transition towards
    Gamma(alpha) over its elapsed time (no data touched it meanwhile), the mean's total caught
    up with the conditional mean path, and the row sums' stale part re-based."""
    n_words = theta.shape[1]
    m = columns.shape[0]
    elapsed = np.empty(m)
    decay_power = np.empty(m)
    drift = np.empty(m)
    grown = np.empty(m)
    for j in range(m):
        w = columns[j]
        elapsed[j], decay_power[j], drift[j], grown[j] = _catch_up_factors(
            column_time[w], column_step[w], column_mark[w], time, steps, mark, decay
        )
    now = math.exp(time)
    for k in numba.prange(theta.shape[0]):
        change = 0.0
        for j in range(m):
            w = columns[j]
            x0 = float(theta[k, w])
            x1, _ = cir(x0, alpha, elapsed[j], stream(key, k * n_words + w))
            theta[k, w] = x1
            x1 = float(theta[k, w])  # as stored (float32 rounds)
            total[k, w] = (
                decay_power[j] * total[k, w]
                + alpha * (1.0 - decay_power[j])
                + (x0 - alpha) * drift[j]
            )
            change += (x1 - alpha) * now - (x0 - alpha) * grown[j]
        row_stale[k] += change
    stamp(columns, column_time, column_step, column_mark, time, steps, mark)


@numba.njit(parallel=True, cache=True)
def advance_columns(
    theta: np.ndarray,  # (K, W), updated in place on ``columns``
    total: np.ndarray,  # (K, W), updated on ``columns``
    row_stale: np.ndarray,  # (K,) float64, updated
    columns: np.ndarray,  # (m,) int64 word ids, all up to date
    topic_word: np.ndarray,  # (K, m) float64: the minibatch's sum_d E[n_dkw] on ``columns``
    scale: float,  # N / n
    alpha: float,
    h: float,
    decay: float,
    now: float,  # e^T before the step
    after: float,  # e^(T + h)
    key: np.uint64,
) -> int:
    """One SCIR step on the minibatch's columns: theta_kw an exact CIR transition of time h
    towards Gamma(alpha + (N/n) E[n_kw]); the step's sample folded into the mean's total. The
    caller stamps the columns with the new time. Returns how many shapes or row sums were not
    finite (a non-finite gradient: the caller restores the state)."""
    n_words = theta.shape[1]
    bad = np.zeros(theta.shape[0], dtype=np.int64)
    for k in numba.prange(theta.shape[0]):
        change = 0.0
        for j in range(columns.shape[0]):
            w = columns[j]
            x0 = float(theta[k, w])
            a = alpha + scale * topic_word[k, j]
            if not math.isfinite(a):
                bad[k] += 1
            x1, _ = cir(x0, a, h, stream(key, k * n_words + w))
            theta[k, w] = x1
            x1 = float(theta[k, w])
            total[k, w] = decay * total[k, w] + (1.0 - decay) * x1
            change += (x1 - alpha) * after - (x0 - alpha) * now
        row_stale[k] += change
        bad[k] += not math.isfinite(row_stale[k])
    return int(bad.sum())


@numba.njit(parallel=True, cache=True)
def beta_columns(
    theta: np.ndarray,  # (K, W)
    columns: np.ndarray,  # (m,) int64
    row_sums: np.ndarray,  # (K,) float64
    floor: float,  # lda.cir.beta_floor
    out: np.ndarray,  # (K, m) float64
) -> None:
    """out = theta[:, columns] / row_sums, raised to ``floor``."""
    for k in numba.prange(theta.shape[0]):
        inverse = 1.0 / row_sums[k]
        for j in range(columns.shape[0]):
            out[k, j] = max(float(theta[k, columns[j]]) * inverse, floor)


@numba.njit(cache=True)
def stamp(
    columns: np.ndarray,
    column_time: np.ndarray,
    column_step: np.ndarray,
    column_mark: np.ndarray,
    time: float,
    steps: int,
    mark: float,
) -> None:
    """Record that ``columns`` are up to date at (time, steps, mark)."""
    for j in range(columns.shape[0]):
        w = columns[j]
        column_time[w] = time
        column_step[w] = steps
        column_mark[w] = mark


@numba.njit(parallel=True, cache=True)
def mean_beta(
    total: np.ndarray,  # (K, W)
    theta: np.ndarray,  # (K, W)
    column_time: np.ndarray,  # (W,)
    column_step: np.ndarray,  # (W,)
    column_mark: np.ndarray,  # (W,)
    time: float,
    steps: int,
    mark: float,
    decay: float,
    alpha: float,
    weight: float,  # the mean's total weight
    normalise: bool,  # rows normalised and raised to ``floor`` (the served beta_mean)
    floor: float,
    out: np.ndarray,  # (K, W), any float dtype
) -> None:
    """The mean of theta read without changing the state: every column's running total brought
    to the current step (as catch_up_columns does) over the weight, each row normalised if
    asked (the served beta_mean), with no (K, W) temporary."""
    n_words = total.shape[1]
    decay_power = np.empty(n_words)
    drift = np.empty(n_words)
    for w in range(n_words):
        _, decay_power[w], drift[w], _ = _catch_up_factors(
            column_time[w], column_step[w], column_mark[w], time, steps, mark, decay
        )
    for k in numba.prange(total.shape[0]):
        row = 0.0
        for w in range(n_words):
            value = (
                decay_power[w] * total[k, w]
                + alpha * (1.0 - decay_power[w])
                + (float(theta[k, w]) - alpha) * drift[w]
            ) / weight
            out[k, w] = value
            row += value
        if normalise:
            inverse = 1.0 / row
            for w in range(n_words):
                out[k, w] = max(float(out[k, w]) * inverse, floor)


@numba.njit(parallel=True, cache=True)
def sample_beta(
    theta: np.ndarray,  # (K, W)
    column_time: np.ndarray,  # (W,)
    time: float,
    alpha: float,
    key: np.uint64,
    floor: float,  # lda.cir.beta_floor of ``out``'s dtype
    out: np.ndarray,  # (K, W), any float dtype: a draw of beta now
) -> None:
    """A draw of beta now: each stale column an exact CIR transition over its elapsed time (as
    catch_up_columns draws it, into ``out`` only), rows normalised, raised to ``floor``."""
    n_words = theta.shape[1]
    for k in numba.prange(theta.shape[0]):
        row = 0.0
        for w in range(n_words):
            elapsed = time - column_time[w]
            x, _ = cir(float(theta[k, w]), alpha, elapsed, stream(key, k * n_words + w))
            out[k, w] = x
            row += float(out[k, w])
        inverse = 1.0 / row
        for w in range(n_words):
            out[k, w] = max(float(out[k, w]) * inverse, floor)
