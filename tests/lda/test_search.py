"""Searching by topic proportions: the sparse rows' Hellinger distance is the dense one over
the distributions they stand for, the nearest rows are a full stable sort's first, and the
bound on a share puts a long article ahead of a stub with a larger share."""

from __future__ import annotations

import numpy as np
import pytest

from lda.search import SparseRows, hellinger, nearest, share_bound, top_shares

K, N, S = 30, 400, 6


def rows(seed: int = 0) -> tuple[SparseRows, np.ndarray]:
    """Sparse rows of random Dirichlet documents, and their expected counts."""
    generator = np.random.default_rng(seed)
    theta = generator.dirichlet(np.full(K, 0.1), size=N)
    lengths = generator.integers(20, 2000, size=N)
    counts = theta * lengths[:, None]
    topics, shares, _ = top_shares(counts, S)
    return SparseRows(topics, shares, K), counts


def test_top_shares_are_the_largest_shares_largest_first() -> None:
    sparse, counts = rows()
    shares = counts / counts.sum(1, keepdims=True)
    for i in range(N):
        expected = np.sort(shares[i])[::-1][:S]
        assert sparse.shares[i] == pytest.approx(expected, rel=1e-6)
        assert shares[i][sparse.topics[i]] == pytest.approx(expected, rel=1e-6)


def test_the_sparse_distance_is_the_dense_one() -> None:
    sparse, _ = rows()
    query = np.random.default_rng(1).dirichlet(np.full(K, 0.2))
    dense = np.stack([sparse.dense(i) for i in range(N)])
    expected = np.sqrt(np.clip(1 - np.sqrt(query[None] * dense).sum(1), 0, None))
    assert hellinger(query, sparse) == pytest.approx(expected, abs=1e-6)


def test_a_row_is_nearest_itself() -> None:
    sparse, _ = rows()
    for i in (0, 17, N - 1):
        distance = hellinger(sparse.dense(i), sparse)
        assert distance[i] == pytest.approx(0.0, abs=1e-3)
        assert nearest(distance, 1)[0] == i


@pytest.mark.parametrize(("limit", "offset"), [(1, 0), (10, 0), (10, 25), (N, 0), (5, N - 2)])
def test_nearest_is_a_full_stable_sort(limit: int, offset: int) -> None:
    distance = np.round(np.random.default_rng(2).random(N), 2)  # many ties
    expected = np.argsort(distance, kind="stable")[offset : offset + limit]
    assert nearest(distance, limit, offset).tolist() == expected.tolist()


def test_a_long_article_is_surer_than_a_stub() -> None:
    stub = share_bound(np.array([0.99]), np.array([40.0]), 50)
    long = share_bound(np.array([0.7]), np.array([800.0]), 50)
    assert long[0] > stub[0]
    # More tokens at the same share: surer; a larger share at the same length: surer.
    assert (
        share_bound(np.array([0.5]), np.array([1000.0]), 50)[0]
        > share_bound(np.array([0.5]), np.array([100.0]), 50)[0]
    )
    assert (
        share_bound(np.array([0.6]), np.array([300.0]), 50)[0]
        > share_bound(np.array([0.5]), np.array([300.0]), 50)[0]
    )


def test_the_bound_is_below_the_share_for_long_articles_and_never_negative() -> None:
    share = np.linspace(0.05, 1.0, 20)
    bound = share_bound(share, np.full(20, 5000.0), 50)
    assert (bound < share).all() and (bound >= 0).all()
    assert (share_bound(np.zeros(3), np.array([0.0, 10.0, 1e4]), 50) >= 0).all()
