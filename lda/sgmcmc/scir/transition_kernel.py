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


def _ziggurat_tables(layers: int, r: float, v: float) -> tuple[np.ndarray, np.ndarray]:
    """The normal ziggurat's layer edges x_i (x_0 = V / f(R) for the base strip, x_1 = R,
    x_layers = 0) and each layer's ratio x_{i+1} / x_i (Doornik 2005, "An Improved Ziggurat
    Method to Generate Normal Random Samples")."""
    x = np.zeros(layers + 1)
    f = math.exp(-0.5 * r * r)
    x[0] = v / f
    x[1] = r
    for i in range(2, layers):
        x[i] = math.sqrt(-2.0 * math.log(v / x[i - 1] + f))
        f = math.exp(-0.5 * x[i] * x[i])
    return x, x[1:] / x[:-1]


# 128 layers of equal area V under exp(-x^2 / 2); the tail beyond R drawn by Marsaglia's method.
_ZIG_R = 3.442619855899
_ZIG_X, _ZIG_RATIO = _ziggurat_tables(128, _ZIG_R, 9.91256303526217e-3)


@numba.njit(cache=True)
def _normal_tail(negative: bool, state: np.uint64) -> tuple[float, np.uint64]:
    """A normal draw conditioned on |x| > R (Marsaglia 1964), with the given sign."""
    while True:
        u1, state = _uniform(state)
        u2, state = _uniform(state)
        x = math.log(u1) / _ZIG_R
        if -2.0 * math.log(u2) >= x * x:
            return (x - _ZIG_R if negative else _ZIG_R - x), state


@numba.njit(cache=True, inline="always")
def _normal(state: np.uint64) -> tuple[float, np.uint64]:
    """A standard normal by the ziggurat (exact; ~99% of draws are one 64-bit word, a table
    lookup and a multiply: the layer from the low 7 bits, a signed uniform from the top 53)."""
    while True:
        bits = _mix(state)
        state = state + _GOLDEN
        layer = int(bits & np.uint64(0x7F))
        u = 2.0 * (((bits >> np.uint64(11)) + 0.5) / _TWO_POW_53) - 1.0
        if abs(u) < _ZIG_RATIO[layer]:
            return u * _ZIG_X[layer], state
        if layer == 0:
            return _normal_tail(bool(u < 0.0), state)
        x = u * _ZIG_X[layer]
        f0 = math.exp(-0.5 * (_ZIG_X[layer] * _ZIG_X[layer] - x * x))
        f1 = math.exp(-0.5 * (_ZIG_X[layer + 1] * _ZIG_X[layer + 1] - x * x))
        w, state = _uniform(state)
        if f1 + w * (f0 - f1) < 1.0:
            return x, state


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


@numba.njit(cache=True, inline="always")
def cir_given(
    theta: float, a: float, c: float, mix: float, state: np.uint64
) -> tuple[float, np.uint64]:
    """:func:`cir` with its step's constants taken once per step or column: c = 1 - e^-h and
    mix = e^-h / c (the Poisson mean per unit of theta)."""
    p, state = poisson(max(theta, 0.0) * mix, state)
    g, state = gamma(a + p, state)
    return c * g, state


@numba.njit(cache=True, inline="always")
def cir_constants(h: float) -> tuple[float, float]:
    """(c, mix) of :func:`cir_given` for a step of time h > 0."""
    c = -math.expm1(-h)
    return c, math.exp(-h) / c


@numba.njit(cache=True)
def cir(theta: float, a: float, h: float, state: np.uint64) -> tuple[float, np.uint64]:
    """theta after time h of dtheta = (a - theta) dt + sqrt(2 theta) dW: c Gamma(a + P), c =
    1 - e^-h, P ~ Poisson(theta e^-h / c). h <= 0 leaves theta as it is."""
    if h <= 0.0:
        return theta, state
    c, mix = cir_constants(h)
    return cir_given(theta, a, c, mix, state)


@numba.njit(parallel=True, cache=True)
def cir_array(
    theta: np.ndarray,  # (m,) float64, updated in place
    a: np.ndarray,  # (m,) float64
    h: float,
    key: np.uint64,
) -> None:
    """theta[i] <- one exact transition of time h towards Gamma(a[i]), coordinate i's stream
    under ``key`` (the tests' entry point; the lazy chain's kernels are in
    lda.sgmcmc.scir.lazy_kernel)."""
    for i in numba.prange(theta.shape[0]):
        theta[i], _ = cir(theta[i], a[i], h, stream(key, i))
