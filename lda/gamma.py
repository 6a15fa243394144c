"""The document-topic prior as every consumer takes it: a scalar (symmetric) or one value per
topic (learned, :mod:`lda.prior`). A tuple, so that frozen configurations stay hashable."""

from __future__ import annotations

import math

import numpy as np

Gamma = float | tuple[float, ...]


def gamma_vector(gamma: Gamma, n_topics: int) -> np.ndarray:
    """(K,) float64 gamma_k: a scalar repeated, or the vector checked against K."""
    if isinstance(gamma, tuple | list | np.ndarray):
        vector = np.asarray(gamma, dtype=np.float64).reshape(-1)
        if vector.shape[0] != n_topics:
            raise ValueError(f"gamma has {vector.shape[0]} values for {n_topics} topics")
    else:
        vector = np.full(n_topics, float(gamma), dtype=np.float64)
    if not (np.all(np.isfinite(vector)) and np.all(vector > 0)):
        raise ValueError("gamma must be finite and positive")
    return vector


def symmetric_value(gamma: Gamma) -> float | None:
    """The common value when every topic has the same gamma (the kernels' old, exact path),
    else None."""
    if isinstance(gamma, tuple | list | np.ndarray):
        values = [float(g) for g in np.asarray(gamma, dtype=np.float64).reshape(-1)]
        if values and all(v == values[0] for v in values):
            return values[0]
        return None
    return float(gamma)


def gamma_total(gamma: Gamma, n_topics: int) -> float:
    """gamma_0 = sum_k gamma_k (K gamma when symmetric)."""
    value = symmetric_value(gamma)
    if value is not None:
        return n_topics * value
    return math.fsum(float(g) for g in gamma_vector(gamma, n_topics))
