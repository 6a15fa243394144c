"""Relevance among a topic's most probable words equals the full ranking's order over them."""

from __future__ import annotations

import numpy as np

from lda.relevance import most_relevant, rerank, stream_marginal


def test_reranking_the_most_probable_words_orders_them_as_the_full_ranking_does() -> None:
    rng = np.random.default_rng(4)
    beta = rng.dirichlet(np.full(300, 0.1), size=6)
    p = stream_marginal(rng.integers(0, 50, size=300).astype(np.float64))
    top = np.argsort(-beta, axis=1)[:, :40]
    ranked = rerank(top, np.take_along_axis(beta, top, axis=1), p, 0.6)
    full = most_relevant(beta, p, 0.6, 300)
    for k in range(6):
        among = [w for w in full[k].tolist() if w in set(top[k].tolist())]
        assert ranked[k].tolist() == among
    assert np.isfinite(np.log(p)).all()  # a word never counted: half a count
