"""The learner benchmark's peers: scikit-learn's online VB and tomotopy's Gibbs LDA.

Adapters only: each builds a peer on the benchmark's word ids and turns its topics into a K x W
topic matrix in *our* word-id order (rows sum to 1), which ``benchmarks/learner.py`` scores with
the same held-out estimator as every other model. Imports of the peers are deferred, so the
benchmark runs without them when they are switched off.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

TOMOTOPY_ALPHA = 0.1  # tomotopy's defaults, written out: the initial document prior
TOMOTOPY_ETA = 0.01  # and the topic-word prior


def doc_term_matrix(documents: Sequence[Sequence[int]], n_words: int) -> Any:
    """(n, W) CSR matrix of word counts, the input of scikit-learn's ``partial_fit``."""
    from scipy.sparse import csr_matrix

    rows: list[int] = []
    cols: list[int] = []
    counts: list[int] = []
    for row, document in enumerate(documents):
        for word, count in sorted(Counter(document).items()):
            rows.append(row)
            cols.append(word)
            counts.append(count)
    return csr_matrix((counts, (rows, cols)), shape=(len(documents), n_words), dtype=np.float64)


def sklearn_lda(n_topics: int, batch_size: int, total_samples: int, seed: int, n_jobs: int) -> Any:
    """scikit-learn's online variational Bayes LDA, its defaults otherwise (priors 1/K,
    learning_offset 10, learning_decay 0.7)."""
    from sklearn.decomposition import LatentDirichletAllocation

    return LatentDirichletAllocation(
        n_components=n_topics,
        learning_method="online",
        batch_size=batch_size,
        total_samples=total_samples,
        random_state=seed,
        n_jobs=n_jobs,
    )


def sklearn_beta(model: Any) -> torch.Tensor:
    """(K, W) topics of a fitted scikit-learn LDA: ``components_`` (lambda) row-normalised."""
    lam = torch.from_numpy(np.asarray(model.components_, dtype=np.float64))
    return lam / lam.sum(dim=1, keepdim=True)


def tomotopy_lda(
    documents: Sequence[Sequence[int]], words: Sequence[str], n_topics: int, seed: int
) -> Any:
    """tomotopy's ``LDAModel`` with its default settings (alpha re-estimated every 10
    iterations) holding ``documents``, each word id passed as its vocabulary word."""
    import tomotopy

    model = tomotopy.LDAModel(k=n_topics, alpha=TOMOTOPY_ALPHA, eta=TOMOTOPY_ETA, seed=seed)
    for document in documents:
        model.add_doc([words[w] for w in document])
    return model


def tomotopy_train(model: Any, iterations: int, workers: int) -> None:
    """``model.train``; ``iterations=0`` only initialises (random topics, vocabulary order)."""
    with warnings.catch_warnings():  # "results may differ with workers != 1": known and accepted
        warnings.simplefilter("ignore", RuntimeWarning)
        model.train(iterations, workers=workers)


def tomotopy_beta(model: Any, index: dict[str, int], n_words: int) -> torch.Tensor:
    """(K, W) beta_kw = (n_kw + eta) / (n_k + W eta) over all W of our words, in our id order.

    tomotopy knows only the words it saw (``used_vocabs``) and smooths over those; its raw
    topic-word values are n_kw + eta. A word it never saw gets eta / (n_k + W eta), so held-out
    tokens of such words keep positive probability, as under our own models' Dirichlet prior.
    """
    eta = float(model.eta)
    ids = torch.tensor([index[w] for w in model.used_vocabs], dtype=torch.int64)
    full = torch.full((int(model.k), n_words), eta, dtype=torch.float64)
    for k in range(int(model.k)):
        raw = np.asarray(model.get_topic_word_dist(k, normalize=False), dtype=np.float64)
        full[k, ids] = torch.from_numpy(raw)
    return full / full.sum(dim=1, keepdim=True)


def tomotopy_gamma(model: Any) -> float:
    """tomotopy's document prior as one number: the mean of its (re-estimated) alpha vector."""
    return float(np.mean(np.asarray(model.alpha, dtype=np.float64)))
