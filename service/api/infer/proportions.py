"""Topic proportions of many texts at once: ``lda.inference.infer_topics``' fixed point, batched.

Each document's iteration is the one it has alone, pi_k <- (pi_k sum_j w_j beta_kj / (pi . beta_j)
+ gamma_k) / (n + gamma_0), run by a compiled kernel (:mod:`lda.inference_kernel`) document
after document: a batch costs its documents' arithmetic and one call, and a document's answer
is the same bit for bit in any batch (it stops at its own first move below the tolerance).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from itertools import chain, pairwise

import numpy as np
from numpy.typing import ArrayLike

from lda.gamma import Gamma, gamma_total, gamma_vector
from lda.inference_kernel import fixed_points
from lda.tokens import WordIndex


def word_columns(beta: ArrayLike) -> np.ndarray:
    """beta (K x W; a CPU tensor is read in place) as :func:`infer_batch` reads it: W x K, a
    word's column a row, in beta's dtype (a view when beta is word-major, as published: no copy
    of a K x W model; the columns a document uses become float64 when the kernel reads them)."""
    columns = np.asarray(beta).T
    return columns if columns.flags.c_contiguous else np.ascontiguousarray(columns)


def proportions(
    columns: ArrayLike,
    ids: np.ndarray,
    starts: np.ndarray,
    gamma: Gamma,
    *,
    iterations: int = 100,
    tolerance: float = 1e-6,
    helpers: Executor | None = None,
    parts: int = 1,
) -> np.ndarray:
    """pi (D x K float64, rows sum to 1) of documents ``ids[starts[d]:starts[d + 1]]`` (word
    ids, int64) under ``columns`` (:func:`word_columns` of beta); uniform for one without
    words. With ``parts`` > 1 the documents are split into that many runs of about as many
    words, all but one run on ``helpers`` (the kernel holds no GIL): answers do not change."""
    matrix = np.asarray(columns)
    if ids.size and not (ids.min() >= 0 and ids.max() < matrix.shape[0]):
        raise IndexError(f"word ids must lie in [0, {matrix.shape[0]})")
    out = np.empty((len(starts) - 1, int(matrix.shape[1])), dtype=np.float64)
    runs = list(pairwise(_split(starts, parts if helpers is not None else 1)))
    k = int(matrix.shape[1])
    vector, total = gamma_vector(gamma, k), gamma_total(gamma, k)

    def run(first: int, last: int) -> None:
        fixed_points(
            matrix, ids, starts[first : last + 1], vector, total, iterations, tolerance,
            out[first:last],
        )  # fmt: skip

    others = [helpers.submit(run, *bounds) for bounds in runs[1:]] if helpers is not None else []
    run(*runs[0])
    for other in others:
        other.result()
    return out


def _split(starts: np.ndarray, parts: int) -> list[int]:
    """Document boundaries cutting the batch into at most ``parts`` runs of about as many
    words (each run at least one document)."""
    documents = len(starts) - 1
    if parts <= 1 or documents <= 1:
        return [0, documents]
    targets = starts[-1] * np.arange(1, parts) / parts
    cuts = np.searchsorted(starts, targets).tolist()
    return sorted({0, documents, *(min(max(c, 1), documents - 1) for c in cuts)})


def flatten(docs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(ids, starts) of documents given as lists of word ids, as :func:`proportions` takes
    them."""
    lengths = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
    starts = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    ids = np.fromiter(chain.from_iterable(docs), dtype=np.int64, count=int(starts[-1]))
    return ids, starts


def warm_up() -> None:
    """Compile (or load from numba's cache) the kernels: the tokeniser's and the fixed point's
    for published (float32) and float64 columns, so that no request waits for them."""
    ids, starts, _ = WordIndex(["word"]).encode(["a word"])
    for dtype in (np.float32, np.float64):
        proportions(np.ones((1, 1), dtype=dtype), ids, starts, 0.1)


def infer_batch(
    columns: ArrayLike,
    docs: Sequence[Sequence[int]],
    gamma: Gamma,
    *,
    iterations: int = 100,
    tolerance: float = 1e-6,
) -> list[list[float]]:
    """pi (length K, sums to 1) of each document given as word ids (:func:`proportions`)."""
    pi = proportions(columns, *flatten(docs), gamma, iterations=iterations, tolerance=tolerance)
    result: list[list[float]] = pi.tolist()
    return result
