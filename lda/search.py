"""Finding documents by their topic proportions, without torch (docs/topics.md, "Searching the
kept articles"): each document's largest shares kept sparse, how sure a share is given the
document's length, and the Hellinger distance between proportions, exact over every row.

A row keeps a document's ``S`` largest shares (topic ids and shares) and its length in tokens.
The mass it does not keep, 1 minus the kept shares, is taken as spread evenly over the other
K - S topics wherever a whole distribution is needed: so a row is a distribution over all K
topics, and a query's distance to it needs only the row's S entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

if TYPE_CHECKING:  # the worker's record hands tensors; the API stays free of torch
    import torch

Array = TypeVar("Array", np.ndarray, "torch.Tensor")

# The shares kept per document: enough for the mass that matters at K = 50 to 1,000 (an
# article's ten largest shares hold almost all of it; docs/topics.md).
SHARES_KEPT = 10
# A kept article's shares are refolded with /infer's fixed point to this tolerance, or this many
# iterations: a fifth of /infer's cost, 0.01 in L1 from its answer (docs/defaults.md, "Search").
FOLD_ITERATIONS = 20
FOLD_TOLERANCE = 1e-4
# How sure a share is: the lower bound of a one-sided 95% interval ...
BOUND_Z = 1.645
# ... under a prior worth this many tokens at the average share 1/K (docs/topics.md, "How sure
# a share is"; why 100: docs/defaults.md, "Search").
PRIOR_TOKENS = 100.0


def top_shares(counts: np.ndarray, keep: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row of ``counts`` (n, K: E[n_dk]) as its ``keep`` largest shares, largest first:
    topic ids (n, S) int16 (-1 where a share is 0), shares (n, S) float32, and the lengths n_d
    (n,) float32."""
    counts = np.asarray(counts, dtype=np.float64)
    n, k = counts.shape
    keep = min(keep, k)
    tokens = counts.sum(axis=1)
    shares = counts / np.maximum(tokens, 1e-12)[:, None]
    part = np.argpartition(-shares, keep - 1, axis=1)[:, :keep] if keep < k else None
    ids = np.broadcast_to(np.arange(k), (n, k)) if part is None else part
    kept = np.take_along_axis(shares, ids, axis=1)
    order = np.lexsort((ids, -kept), axis=1)  # largest first, ties by topic id
    ids = np.take_along_axis(ids, order, axis=1)
    kept = np.take_along_axis(kept, order, axis=1)
    ids = np.where(kept > 0, ids, -1)  # a topic with no share is not kept
    return ids.astype(np.int16), kept.astype(np.float32), tokens.astype(np.float32)


def share_bound(
    share: Array,
    tokens: Array,
    n_topics: int,
    *,
    prior_tokens: float = PRIOR_TOKENS,
    z: float = BOUND_Z,
) -> Array:
    """How sure the model is that a document is about a topic: the lower end of a one-sided
    interval of its share given its length. The share's posterior is Beta(n_dk + m/K, n_d -
    n_dk + m(K-1)/K), a prior of m tokens at the average share 1/K; the bound is its mean less
    ``z`` standard deviations (never below 0). A short document's share is pulled to 1/K and
    its interval is wide, so a 40-token stub at 99% ranks below a long article at 70%.
    Elementwise over numpy arrays (or torch tensors: only arithmetic)."""
    total = tokens + prior_tokens
    mean = (share * tokens + prior_tokens / n_topics) / total
    spread = (mean * (1 - mean) / (total + 1)) ** 0.5
    bound = mean - z * spread
    return bound * (bound > 0)


@dataclass(frozen=True)
class SparseRows:
    """Documents' largest shares: ``topics`` (N, S) ids (-1 pads a short row), ``shares``
    (N, S) and the number of topics K."""

    topics: np.ndarray
    shares: np.ndarray
    n_topics: int

    def __post_init__(self) -> None:
        if self.topics.shape != self.shares.shape or self.topics.ndim != 2:
            raise ValueError(f"topics {self.topics.shape} and shares {self.shares.shape} differ")

    @property
    def rest(self) -> np.ndarray:
        """(N,) each row's mass on each topic it does not keep (0 when it keeps them all)."""
        return _rest(self.topics, self.shares, self.n_topics)

    def dense(self, row: int) -> np.ndarray:
        """Row ``row`` as a distribution over all K topics (the rest spread evenly)."""
        ids, shares = self.topics[row], self.shares[row]
        kept = ids >= 0
        out = np.full(self.n_topics, _rest(ids[None], shares[None], self.n_topics)[0])
        out[ids[kept]] = shares[kept]
        return out / out.sum()


def _rest(topics: np.ndarray, shares: np.ndarray, n_topics: int) -> np.ndarray:
    """(N,) the mass of each row not kept, spread over the topics it does not keep."""
    others = n_topics - (topics >= 0).sum(axis=1)
    left = np.clip(1.0 - shares.sum(axis=1, dtype=np.float64), 0.0, 1.0)
    return np.where(others > 0, left / np.maximum(others, 1), 0.0)


def hellinger(query: np.ndarray, rows: SparseRows, rest: np.ndarray | None = None) -> np.ndarray:
    """(N,) the Hellinger distance between the distribution ``query`` (K,) and each row,
    sqrt(1 - sum_k sqrt(q_k p_k)), the row's unkept topics at its ``rest`` each (computed when
    not given: :attr:`SparseRows.rest`). Exact: O(N x S)."""
    root = np.sqrt(np.clip(np.asarray(query, dtype=np.float64), 0.0, None))
    rest = rows.rest if rest is None else rest
    valid = rows.topics >= 0
    picked = np.where(valid, root[np.where(valid, rows.topics, 0)], 0.0)
    kept = (picked * np.sqrt(np.clip(rows.shares, 0.0, None))).sum(axis=1)
    spread = np.sqrt(rest) * (root.sum() - picked.sum(axis=1))
    return np.sqrt(np.clip(1.0 - kept - spread, 0.0, None))


def nearest(distance: np.ndarray, limit: int, offset: int = 0) -> np.ndarray:
    """The row numbers of the ``limit`` smallest distances after the first ``offset``, nearest
    first, ties by row number (the order a full stable sort gives)."""
    n = distance.shape[0]
    end = min(n, offset + limit)
    if end <= offset:
        return np.zeros(0, dtype=np.int64)
    if end < n:
        cut = np.partition(distance, end - 1)[end - 1]
        candidates = np.flatnonzero(distance <= cut)
    else:
        candidates = np.arange(n)
    order = candidates[np.argsort(distance[candidates], kind="stable")]
    return order[offset:end]
