"""Topic quality beyond perplexity: NPMI coherence and topic diversity (docs/heldout.md).

NPMI coherence of a topic is the mean, over pairs of its top words, of
    NPMI(a, b) = log((p(a, b) + eps) / (p(a) p(b))) / -log(p(a, b) + eps),
with p the share of reference documents containing the word(s) (a boolean document window):
gensim's ``CoherenceModel(coherence="c_npmi")`` with a window as long as any document, eps
1e-12, except that a pair with a word no document contains scores -1 (gensim: infinite). It
lies in [-1, 1]; higher means the words co-occur more than chance. Topic diversity is the share
of distinct words among all topics' top words (1: no word shared).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

EPS = 1e-12  # gensim's
COHERENCE_WORDS = 10  # top words per topic scored for coherence (the standard choice)
DIVERSITY_WORDS = 25  # top words per topic counted for diversity


def npmi_coherence(
    top_words: torch.Tensor, documents: Sequence[Sequence[int]], eps: float = EPS
) -> torch.Tensor:
    """(K,) mean NPMI over the pairs of each row of ``top_words`` (K x N word ids), counted in
    ``documents`` (word-id lists); NaN when there are no documents."""
    n_topics = top_words.shape[0]
    if not documents:
        return torch.full((n_topics,), float("nan"), dtype=torch.float64)
    vocab, local = torch.unique(top_words.cpu(), return_inverse=True)  # local: K x N
    position = {int(w): i for i, w in enumerate(vocab.tolist())}
    present = torch.zeros(len(documents), len(position), dtype=torch.float64)
    for d, words in enumerate(documents):
        hits = [position[w] for w in set(words) if w in position]
        if hits:
            present[d, hits] = 1.0
    return _npmi(local, present, eps)


def npmi_coherence_of_tokens(
    top_words: torch.Tensor, words: torch.Tensor, lengths: torch.Tensor, eps: float = EPS
) -> torch.Tensor:
    """:func:`npmi_coherence` over the documents given as ``words`` ((T,) word ids, one
    document after another) and ``lengths`` ((D,) tokens each): no pass over them in Python."""
    n_topics = top_words.shape[0]
    n_docs = int(lengths.numel())
    if n_docs == 0:
        return torch.full((n_topics,), float("nan"), dtype=torch.float64)
    vocab, local = torch.unique(top_words.cpu(), return_inverse=True)  # local: K x N
    words = words.cpu()
    at = torch.searchsorted(vocab, words).clamp_max(vocab.numel() - 1)
    hit = vocab[at] == words
    document = torch.repeat_interleave(torch.arange(n_docs), lengths.cpu())
    present = torch.zeros(n_docs, int(vocab.numel()), dtype=torch.float64)
    present[document[hit], at[hit]] = 1.0
    return _npmi(local, present, eps)


def _npmi(local: torch.Tensor, present: torch.Tensor, eps: float) -> torch.Tensor:
    """(K,) mean pairwise NPMI of each row of ``local`` ((K, N) columns of ``present``), the
    documents' (D, V) word presence."""
    n_topics, n_top = local.shape
    n_docs = float(present.shape[0])
    single = present.sum(0) / n_docs  # p(w)
    joint = present.T @ present / n_docs  # p(a, b)
    a = local[:, :, None].expand(n_topics, n_top, n_top)
    b = local[:, None, :].expand(n_topics, n_top, n_top)
    p_ab = joint[a, b] + eps
    p_a_p_b = single[a] * single[b]
    npmi = torch.log(p_ab / p_a_p_b.clamp_min(eps * eps)) / -torch.log(p_ab)
    # A word no reference document contains co-occurs with nothing: NPMI's limit, -1 (gensim
    # would give infinity).
    npmi = torch.where(p_a_p_b > 0, npmi, torch.full_like(npmi, -1.0))
    pairs = ~torch.eye(n_top, dtype=torch.bool).expand(n_topics, n_top, n_top)
    return (npmi * pairs).sum(dim=(1, 2)) / pairs[0].sum()


def topic_diversity(top_words: torch.Tensor) -> float:
    """Distinct words among all rows of ``top_words`` (K x N ids) over K N."""
    return torch.unique(top_words).numel() / top_words.numel()


def top_word_ids(beta: torch.Tensor, n: int) -> torch.Tensor:
    """(K, n) the ``n`` most probable word ids of each topic of ``beta``, most probable first."""
    return torch.topk(beta, k=min(n, beta.shape[1]), dim=1).indices.cpu()


@dataclass(frozen=True)
class TopicQuality:
    """Each topic's NPMI coherence (its top COHERENCE_WORDS) and the topics' diversity (their
    top DIVERSITY_WORDS)."""

    coherence: torch.Tensor  # (K,) float64, NaN without reference documents
    diversity: float

    @property
    def mean_coherence(self) -> float:
        return float(self.coherence.mean())


def topic_quality(beta: torch.Tensor, documents: Sequence[Sequence[int]]) -> TopicQuality:
    """Coherence and diversity of the topics ``beta`` (K x W), co-occurrence counted in
    ``documents``."""
    coherence = npmi_coherence(top_word_ids(beta, COHERENCE_WORDS), documents)
    return TopicQuality(coherence, topic_diversity(top_word_ids(beta, DIVERSITY_WORDS)))
