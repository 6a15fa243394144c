"""Topic proportions of many texts at once: ``lda.inference.infer_topics``' fixed point, batched.

Each document's iteration is the one it has alone, pi_k <- (pi_k sum_j w_j beta_kj / (pi . beta_j)
+ gamma) / (n + K gamma), written as two batched matrix products over documents of similar
length padded to the longest (padding weighs 0): a batch costs a few large torch calls per
iteration instead of many small ones per document. A document stops where it would stop alone
(its first move below the tolerance), so its answer does not depend on the batch it came in.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

TINY = torch.finfo(torch.float64).tiny
# Padded elements (documents x distinct words x topics) of one group computed together: large
# enough that torch's per-call cost is shared, small enough to stay in cache-sized memory.
GROUP_ELEMENTS = 1 << 17


def _distinct(ids: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """A document's distinct word ids and their counts."""
    if not ids:
        empty = torch.zeros(0, dtype=torch.long)
        return empty, empty
    distinct, counts = torch.unique(torch.tensor(ids, dtype=torch.long), return_counts=True)
    return distinct, counts


def _groups(lengths: list[int], k: int) -> list[list[int]]:
    """Documents (by index) grouped by similar length, each group within GROUP_ELEMENTS."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    groups: list[list[int]] = []
    current: list[int] = []
    for i in order:  # ascending: the document added is its group's longest
        if current and (len(current) + 1) * max(lengths[i], 1) * k > GROUP_ELEMENTS:
            groups.append(current)
            current = []
        current.append(i)
    if current:
        groups.append(current)
    return groups


def _fixed_point(
    beta_t: torch.Tensor,
    docs: list[tuple[torch.Tensor, torch.Tensor]],
    gamma: float,
    iterations: int,
    tolerance: float,
) -> torch.Tensor:
    """pi (D x K, unnormalised) of one group of documents."""
    k = int(beta_t.shape[1])
    longest = max(1, max(len(distinct) for distinct, _ in docs))
    index = torch.zeros(len(docs), longest, dtype=torch.long)
    weights = torch.zeros(len(docs), longest, dtype=torch.float64)
    for i, (distinct, counts) in enumerate(docs):
        index[i, : len(distinct)] = distinct
        weights[i, : len(distinct)] = counts.to(torch.float64)
    columns = beta_t[index].to(torch.float64)  # D x L x K
    # A word no topic can emit carries no information about pi (infer_topics drops it too).
    weights = torch.where(columns.sum(2) > 0, weights, torch.zeros((), dtype=torch.float64))
    scale = 1.0 / (weights.sum(1, keepdim=True) + k * gamma)
    pi = torch.empty(len(docs), k, dtype=torch.float64)  # each row written once, when it stops
    current = torch.full((len(docs), k), 1.0 / k, dtype=torch.float64)
    rows = torch.arange(len(docs))  # the documents the tensors hold
    live = torch.ones(len(docs), dtype=torch.bool)  # of those, the ones still moving
    for _ in range(iterations):
        # denominator_j = sum_k pi_k beta_kj; then pi_k sum_j w_j beta_kj / denominator_j
        denominator = torch.bmm(columns, current[:, :, None])[:, :, 0].clamp_min_(TINY)
        ratio = (weights / denominator)[:, None, :]
        new = torch.bmm(ratio, columns)[:, 0, :].mul_(current).add_(gamma).mul_(scale)
        stopped = live & ((new - current).abs_().amax(1) < tolerance)
        current = new
        if bool(stopped.any()):
            pi[rows[stopped]] = new[stopped]
            live &= ~stopped
            remaining = int(live.sum())
            if remaining == 0:
                return pi
            if 4 * remaining <= 3 * len(rows):  # drop stopped rows once they are a quarter
                rows, columns, weights = rows[live], columns[live], weights[live]
                scale, current = scale[live], current[live]
                live = torch.ones(remaining, dtype=torch.bool)
    pi[rows[live]] = current[live]
    return pi


def word_columns(beta: torch.Tensor) -> torch.Tensor:
    """beta (K x W) as :func:`infer_batch` reads it: W x K, a word's column a row, in beta's
    dtype (a view when beta is word-major, as published: no copy of a 400 MB model; the
    columns a batch uses become float64 when gathered)."""
    columns = beta.t()
    return columns if columns.is_contiguous() else columns.contiguous()


def infer_batch(
    columns: torch.Tensor,
    docs: Sequence[Sequence[int]],
    gamma: float,
    *,
    iterations: int = 100,
    tolerance: float = 1e-6,
) -> list[list[float]]:
    """pi (length K, sums to 1) of each document given as word ids, under ``columns``
    (:func:`word_columns` of beta); uniform for a document without words."""
    k = int(columns.shape[1])
    distinct = [_distinct(ids) for ids in docs]
    pi = torch.empty(len(docs), k, dtype=torch.float64)
    for group in _groups([len(d) for d, _ in distinct], k):
        members = [distinct[i] for i in group]
        pi[group] = _fixed_point(columns, members, gamma, iterations, tolerance)
    return (pi / pi.sum(1, keepdim=True)).tolist()
