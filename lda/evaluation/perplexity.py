"""Held-out perplexity by document completion (docs/heldout.md, as in Patterson & Teh).

Every 10th token of a held-out document is the test part; Gibbs sampling on the other 90% with
beta fixed (each chain started from p(k | w) ∝ beta_kw, so a few sweeps of burn-in do) estimates
pi_hat_dk = (E[n_dk] + gamma_k) / (n_d + gamma_0); then perplexity = exp(-mean over test tokens
of log sum_k pi_hat_dk beta_kw). The functions take any K x W topic matrix and a
:class:`~lda.gibbs.GibbsConfig` for the sweeps, so peers are scored with the same estimator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from lda.batch import Batch
from lda.config import default_burn_in
from lda.gamma import Gamma, gamma_total, gamma_vector, symmetric_value
from lda.gibbs import GibbsConfig, gibbs_expectations

TEST_EVERY = 10  # every 10th token is held out for testing (docs/heldout.md)
# Gibbs runs over chunks of documents to bound memory: at most CHUNK_TOKENS tokens, and at most
# CHUNK_ENTRIES tokens x K: a kernel's per-token or per-word arrays are that size, large at large
# K with CHUNK_TOKENS tokens alone.
CHUNK_TOKENS = 100_000
CHUNK_ENTRIES = 10_000_000


@dataclass(frozen=True)
class HeldoutSet:
    """Held-out documents split into the observed 90% and the test tokens."""

    observed: Batch
    test_words: torch.Tensor  # (T_test,)
    test_documents: torch.Tensor  # (T_test,) index of each test token's document

    @property
    def n_test_tokens(self) -> int:
        return int(self.test_words.numel())

    @classmethod
    def from_documents(
        cls, documents: Sequence[Sequence[int]], device: torch.device | str = "cpu"
    ) -> HeldoutSet:
        """Split each document: positions 9, 19, 29, ... are test tokens."""
        observed, test_words, test_documents = [], [], []
        for d, words in enumerate(documents):
            observed.append([w for j, w in enumerate(words) if j % TEST_EVERY != TEST_EVERY - 1])
            test = [w for j, w in enumerate(words) if j % TEST_EVERY == TEST_EVERY - 1]
            test_words.extend(test)
            test_documents.extend([d] * len(test))
        return cls(
            observed=Batch.from_ids(observed, device),
            test_words=torch.tensor(test_words, dtype=torch.int64, device=device),
            test_documents=torch.tensor(test_documents, dtype=torch.int64, device=device),
        )


def _chunks(batch: Batch, n_topics: int) -> list[tuple[int, int]]:
    """Document ranges [a, b) whose tokens stay near the chunk size for K = ``n_topics``."""
    size = max(1, min(CHUNK_TOKENS, CHUNK_ENTRIES // max(1, n_topics)))
    offsets = batch.offsets.tolist()
    ranges, start = [], 0
    for d in range(1, len(offsets)):
        if offsets[d] - offsets[start] >= size:
            ranges.append((start, d))
            start = d
    if start < len(offsets) - 1:
        ranges.append((start, len(offsets) - 1))
    return ranges


def document_topic_proportions(
    beta: torch.Tensor, batch: Batch, config: GibbsConfig, generator: torch.Generator
) -> torch.Tensor:
    """(n, K) pi_hat_dk = (E[n_dk] + gamma_k) / (n_d + gamma_0) by Gibbs with beta fixed, swept
    as ``config`` says (the document sums only: no word sums are kept)."""
    config = replace(config, need_topic_word=False)
    n_topics = beta.shape[0]
    value = symmetric_value(config.gamma)
    gamma: float | torch.Tensor = (
        value
        if value is not None
        else (torch.from_numpy(gamma_vector(config.gamma, n_topics)).to(beta.device, beta.dtype))
    )
    total = n_topics * value if value is not None else gamma_total(config.gamma, n_topics)
    parts = []
    for a, b in _chunks(batch, n_topics):
        offsets = batch.offsets[a : b + 1]
        words = batch.words[int(offsets[0]) : int(offsets[-1])]
        chunk = Batch(words=words, offsets=offsets - offsets[0])
        parts.append(gibbs_expectations(beta, chunk, config, generator).document_topic())
    counts = torch.cat(parts) if parts else beta.new_zeros(0, n_topics)
    lengths = batch.lengths.to(beta.device, beta.dtype)[:, None]
    return (counts.to(beta.dtype) + gamma) / (lengths + total)


def test_token_probabilities(
    beta: torch.Tensor, heldout: HeldoutSet, config: GibbsConfig, generator: torch.Generator
) -> torch.Tensor:
    """p(w | d) = sum_k pi_hat_dk beta_kw for every test token, CHUNK_ENTRIES / K tokens at a
    time: all at once, the (tokens, K) products of a large model's held-out set took gigabytes."""
    pi = document_topic_proportions(beta, heldout.observed, config, generator)
    documents, words = heldout.test_documents, heldout.test_words
    size = max(1, CHUNK_ENTRIES // max(1, beta.shape[0]))
    parts = [
        (pi[documents[i : i + size]] * beta[:, words[i : i + size]].T).sum(dim=1)
        for i in range(0, int(words.numel()), size)
    ]
    return torch.cat(parts) if parts else beta.new_zeros(0)


def perplexity_from_probabilities(probabilities: torch.Tensor) -> float:
    """exp(-mean log p) over the test tokens."""
    if probabilities.numel() == 0:
        return math.nan
    return float(torch.exp(-probabilities.double().log().mean()))


def perplexity(
    beta: torch.Tensor,
    heldout: HeldoutSet,
    gamma: Gamma,
    sweeps: int = 50,
    burn_in: int | None = None,
    generator: torch.Generator | None = None,
) -> float:
    """Document-completion perplexity of any K x W topic matrix ``beta`` (rows sum to 1), by
    exact sweeps from a start drawn from beta."""
    generator = generator or torch.Generator(device=beta.device).manual_seed(0)
    burn = default_burn_in(sweeps) if burn_in is None else burn_in
    config = GibbsConfig(gamma, sweeps, burn, method="exact", init="beta")
    return perplexity_from_probabilities(test_token_probabilities(beta, heldout, config, generator))


class PosteriorAverage:
    """Running mean of p(w | d) over successive evaluations: the posterior-averaged predictive."""

    def __init__(self) -> None:
        self.total: torch.Tensor | None = None
        self.count = 0

    def add(self, probabilities: torch.Tensor) -> float:
        """Fold in one evaluation; return the perplexity of the averaged predictive."""
        p = probabilities.double()
        self.total = p.clone() if self.total is None else self.total + p
        self.count += 1
        return perplexity_from_probabilities(self.total / self.count)

    def state_dict(self) -> dict[str, object]:
        return {"total": self.total, "count": self.count}

    def load_state_dict(self, state: dict[str, object]) -> None:
        total = state["total"]
        self.total = total if isinstance(total, torch.Tensor) else None
        self.count = int(state["count"])  # type: ignore[call-overload]
