"""Topic proportions of many texts at once: ``lda.inference.infer_topics``' fixed point, batched.

Each document's iteration is the one it has alone, pi_k <- (pi_k sum_j w_j beta_kj / (pi . beta_j)
+ gamma) / (n + K gamma), run by a compiled kernel (:mod:`service.api.fixed_point`) document
after document: a batch costs its documents' arithmetic and one call, and a document's answer
is the same bit for bit in any batch (it stops at its own first move below the tolerance).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np
import torch

from service.api.fixed_point import fixed_points


def word_columns(beta: torch.Tensor) -> torch.Tensor:
    """beta (K x W) as :func:`infer_batch` reads it: W x K, a word's column a row, in beta's
    dtype (a view when beta is word-major, as published: no copy of a 400 MB model; the
    columns a document uses become float64 when the kernel reads them)."""
    columns = beta.t()
    return columns if columns.is_contiguous() else columns.contiguous()


def proportions(
    columns: torch.Tensor,
    docs: Sequence[Sequence[int]],
    gamma: float,
    *,
    iterations: int = 100,
    tolerance: float = 1e-6,
) -> np.ndarray:
    """pi (D x K float64, rows sum to 1) of documents given as word ids, under ``columns``
    (:func:`word_columns` of beta); uniform for a document without words."""
    lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
    starts = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    ids = np.fromiter(chain.from_iterable(docs), dtype=np.int64, count=int(starts[-1]))
    if ids.size and not (ids.min() >= 0 and ids.max() < columns.shape[0]):
        raise IndexError(f"word ids must lie in [0, {columns.shape[0]})")
    out = np.empty((len(docs), int(columns.shape[1])), dtype=np.float64)
    fixed_points(columns.numpy(), ids, starts, gamma, iterations, tolerance, out)
    return out


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernel for published (float32) and float64
    columns, so that no request waits for it."""
    for dtype in (torch.float32, torch.float64):
        proportions(torch.ones(1, 1, dtype=dtype), [[0]], 0.1)


def infer_batch(
    columns: torch.Tensor,
    docs: Sequence[Sequence[int]],
    gamma: float,
    *,
    iterations: int = 100,
    tolerance: float = 1e-6,
) -> list[list[float]]:
    """:func:`proportions` as lists (length K, summing to 1), one per document."""
    pi = proportions(columns, docs, gamma, iterations=iterations, tolerance=tolerance)
    result: list[list[float]] = pi.tolist()
    return result
