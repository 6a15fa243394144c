"""The closed-form scores (docs/model.md, "Scoring moves in closed form"): each is the change in
the collapsed log joint log p(w, z), checked against the joint computed whole before and after
the move; and they decide as they should: a pair drawn from one topic merges, two topics do
not, a topic holding two kinds of documents splits into them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from scipy import sparse

from lda.shaping import evidence

W = 30


def joint(
    topic: torch.Tensor,
    word: torch.Tensor,
    doc: torch.Tensor,
    gamma: torch.Tensor,
    alpha: float,
    n_docs: int,
) -> float:
    """log p(w, z) with beta and every document's proportions integrated out, topics
    0..len(gamma)-1 (a topic with no token adds nothing but its gamma to gamma_0)."""
    L = gamma.numel()
    n_kw = torch.zeros(L, W, dtype=torch.float64).index_put_(
        (topic, word), torch.ones(topic.numel(), dtype=torch.float64), accumulate=True
    )
    n_dk = torch.zeros(n_docs, L, dtype=torch.float64).index_put_(
        (doc, topic), torch.ones(topic.numel(), dtype=torch.float64), accumulate=True
    )
    a = torch.tensor(alpha, dtype=torch.float64)
    words = (torch.lgamma(a + n_kw) - torch.lgamma(a)).sum() - (
        torch.lgamma(W * a + n_kw.sum(1)) - torch.lgamma(W * a)
    ).sum()
    g0 = gamma.sum()
    docs = (torch.lgamma(g0) - torch.lgamma(g0 + n_dk.sum(1))).sum() + (
        torch.lgamma(gamma + n_dk) - torch.lgamma(gamma)
    ).sum()
    return float(words + docs)


def _draw(seed: int = 0, L: int = 4, D: int = 7, T: int = 120) -> evidence.Draw:
    """A draw of T tokens over D documents and L topics, the words over W (not all used)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.full((D,), T // D, dtype=torch.int64)
    lengths[: T - int(lengths.sum())] += 1
    words = torch.randint(W - 5, (T,), generator=g)
    beta = torch.rand(L, W, generator=g, dtype=torch.float64)
    beta /= beta.sum(1, keepdim=True)
    expected = torch.rand(D, L, generator=g, dtype=torch.float64) * 10
    gamma = torch.tensor([0.3, 0.5, 0.2, 0.7][:L], dtype=torch.float64)
    return evidence.draw(words, lengths, expected, beta, gamma, 0.05, g)


def _tokens(d: evidence.Draw) -> tuple[torch.Tensor, torch.Tensor]:
    """(global word ids, documents) of the draw's tokens."""
    return d.words[d.token_word], d.token_doc


def _replicated(d: evidence.Draw, c: int, topic: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The tokens with ``topic`` as c copies of every document: what ``scale`` c stands for."""
    word, doc = _tokens(d)
    D = d.doc_topic.shape[0]
    copies = torch.arange(c).repeat_interleave(word.numel())
    return topic.repeat(c), word.repeat(c), doc.repeat(c) + copies * D


@pytest.mark.parametrize("learned", [False, True])
@pytest.mark.parametrize("scale", [1, 3])
def test_a_merge_score_is_the_change_in_the_joint(learned: bool, scale: int) -> None:
    d = dataclasses.replace(_draw(), scale=float(scale))
    D = d.doc_topic.shape[0] * scale
    before = _replicated(d, scale, d.token_topic)
    after_topic = torch.where(d.token_topic == 2, torch.tensor(1), d.token_topic)
    after = _replicated(d, scale, after_topic)
    keep = torch.tensor([0, 1, 3])
    gamma_after = d.gamma.clone()
    if learned:
        gamma_after[1] += gamma_after[2]
    # topic 2 is gone: renumber 3 -> 2
    renumbered = torch.where(after[0] == 3, torch.tensor(2), after[0])
    expected = joint(renumbered, after[1], after[2], gamma_after[keep], d.alpha, D) - joint(
        *before, d.gamma, d.alpha, D
    )
    assert evidence.merge_gain(d, 1, 2, learned) == pytest.approx(expected, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("learned", [False, True])
def test_a_split_score_is_the_change_in_the_joint(learned: bool) -> None:
    d = _draw(1)
    word, doc = _tokens(d)
    D = d.doc_topic.shape[0]
    g = torch.Generator().manual_seed(3)
    first = torch.rand(d.token_topic.numel(), generator=g) < 0.6
    on_k = d.token_topic == 1
    topic = torch.where(on_k & ~first, torch.tensor(4), d.token_topic)
    gamma_after = torch.cat([d.gamma, d.gamma[1:2]])
    if learned:
        share = float((on_k & first).sum()) / float(on_k.sum())
        gamma_after[1], gamma_after[4] = d.gamma[1] * share, d.gamma[1] * (1 - share)
    expected = joint(topic, word, doc, gamma_after, d.alpha, D) - joint(
        d.token_topic, word, doc, d.gamma, d.alpha, D
    )
    assert evidence.split_gain(d, 1, first, learned) == pytest.approx(expected, rel=1e-9)


def test_a_retire_score_is_the_change_in_the_joint() -> None:
    d = _draw(2)
    word, doc = _tokens(d)
    D = d.doc_topic.shape[0]
    tokens, to = evidence.reassign(d, 0, torch.Generator().manual_seed(4))
    assert tokens.numel() > 0 and not bool((to == 0).any())
    topic = d.token_topic.clone()
    topic[tokens] = to
    expected = joint(topic - 1, word, doc, d.gamma[1:], d.alpha, D) - joint(
        d.token_topic, word, doc, d.gamma, d.alpha, D
    )
    assert evidence.retire_gain(d, 0, tokens, to) == pytest.approx(expected, rel=1e-9)


def test_the_draw_counts_its_tokens() -> None:
    d = _draw()
    assert d.topic_word.sum() == d.token_topic.numel() == d.doc_topic.sum()
    assert torch.equal(d.doc_topic.sum(1), d.lengths)


def _blocks(seed: int, blocks: list[int], docs_per_block: int = 40, length: int = 60):
    """Documents each from one block of 10 words (``blocks``), every token on topic 0 of a
    two-topic draw whose topic 1 holds a third block."""
    g = torch.Generator().manual_seed(seed)
    words, lengths = [], []
    for b in [*blocks, 2]:
        for _ in range(docs_per_block):
            words.append(b * 10 + torch.randint(10, (length,), generator=g))
            lengths.append(length)
    flat = torch.cat(words)
    beta = torch.zeros(2, W, dtype=torch.float64)
    beta[0, [b * 10 + i for b in blocks for i in range(10)]] = 1.0
    beta[1, 20:30] = 1.0
    beta /= beta.sum(1, keepdim=True)
    beta += 1e-12
    D = len(lengths)
    expected = torch.zeros(D, 2, dtype=torch.float64)
    expected[: D - docs_per_block, 0] = length
    expected[D - docs_per_block :, 1] = length
    gamma = torch.full((2,), 0.03, dtype=torch.float64)
    lens = torch.tensor(lengths)
    return evidence.draw(flat, lens, expected, beta, gamma, 1e-3, g)


def test_two_kinds_of_documents_on_one_topic_split_into_them() -> None:
    d = _blocks(0, [0, 1])
    first = evidence.halves(d, 0, None)
    on_0 = d.token_topic == 0
    block = (d.words[d.token_word] // 10)[on_0]
    sides = first[on_0]
    assert bool((sides == (block == block[0])).all()) or bool((sides == (block != block[0])).all())
    assert evidence.split_gain(d, 0, first, learned=False) > 0
    f = evidence.fraction_of(d, 0, first)
    assert f.shape == (W,) and bool(((f >= 0) & (f <= 1)).all())


def test_halves_started_from_a_proposals_fraction_split_along_it() -> None:
    """A proposal's fraction leaning to block 0's words starts two-means there: the first half
    is block 0's documents."""
    d = _blocks(0, [0, 1])
    fraction = torch.full((W,), 0.5, dtype=torch.float64)
    fraction[0:10], fraction[10:20] = 0.9, 0.1
    first = evidence.halves(d, 0, fraction)
    on_0 = d.token_topic == 0
    block = (d.words[d.token_word] // 10)[on_0]
    assert torch.equal(first[on_0], block == 0)


def test_two_means_splits_two_groups_and_does_not_peel_an_outlier() -> None:
    """Two groups of 20 documents on words 0-9 and 10-19, every document sharing word 30, and
    one outlier on words 20-29 alone: two-means divides the groups. Started from the longest
    document against the one least like it (the outlier), it would peel the outlier off."""
    g = np.random.default_rng(0)
    rows = [np.zeros(31)]
    rows[0][20:30] = g.random(10) + 0.5  # the outlier, first
    for group in (0, 1):
        for _ in range(20):
            row = np.zeros(31)
            row[group * 10 : group * 10 + 10] = g.random(10) * (g.random(10) < 0.6)
            row[30] = 1.0
            rows.append(row)
    x = np.array(rows)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    unit = sparse.csr_matrix(x)
    sure = torch.ones(x.shape[0], dtype=torch.bool)
    side = evidence.two_means(unit, sure, evidence.SUB_SWEEPS).numpy()
    first, second = side[1:21], side[21:]
    assert len(set(first.tolist())) == len(set(second.tolist())) == 1  # each group one side
    assert first[0] != second[0]  # and the two groups apart


def test_one_kind_of_document_is_not_split() -> None:
    d = _blocks(1, [0])
    first = evidence.halves(d, 0, None)
    assert evidence.split_gain(d, 0, first, learned=False) < 0


def test_a_pair_from_one_topic_merges_and_two_topics_do_not() -> None:
    g = torch.Generator().manual_seed(5)
    D, n = 60, 50
    words = torch.randint(10, (D * n,), generator=g)  # one block of words
    lengths = torch.full((D,), n)
    beta = torch.zeros(3, W, dtype=torch.float64)
    beta[:2, :10] = 0.1  # topics 0 and 1 both the block: a duplicate pair
    beta[2, 10:20] = 0.1  # topic 2 another block
    beta += 1e-9
    expected = torch.zeros(D, 3, dtype=torch.float64)
    expected[:, 0] = expected[:, 1] = n / 2
    gamma = torch.full((3,), 0.03, dtype=torch.float64)
    d = evidence.draw(words, lengths, expected, beta, gamma, 1e-3, g)
    assert evidence.merge_gain(d, 0, 1, learned=False) > 0
    # two topics on different words: give topic 2 the second half of the documents
    words2 = torch.cat([words[: D * n // 2], 10 + words[D * n // 2 :]])
    expected2 = torch.zeros(D, 3, dtype=torch.float64)
    expected2[: D // 2, 0] = n
    expected2[D // 2 :, 2] = n
    d2 = evidence.draw(words2, lengths, expected2, beta, gamma, 1e-3, g)
    assert evidence.merge_gain(d2, 0, 2, learned=False) < 0


def test_each_token_draws_its_topic_in_proportion_to_weight_times_beta() -> None:
    """Two documents of 20,000 tokens each (two words) over 20 topics: each (document, word)
    draws among the document's 16 likeliest topics with p proportional to (E[n_dk] +
    gamma_k) beta[k, w], never one outside them. Chi-square, p > 1e-3 at this seed."""
    from scipy import stats

    g = torch.Generator().manual_seed(5)
    L, D, T = 20, 2, 20_000
    beta = torch.rand(L, W, generator=g, dtype=torch.float64) + 0.05
    beta /= beta.sum(1, keepdim=True)
    expected = torch.rand(D, L, generator=g, dtype=torch.float64) * 10
    gamma = torch.full((L,), 0.1, dtype=torch.float64)
    words = torch.tensor([3, 7], dtype=torch.int64).repeat(D * T // 2)
    lengths = torch.full((D,), T, dtype=torch.int64)
    d = evidence.draw(words, lengths, expected, beta, gamma, 0.05, g)
    for doc in range(D):
        weight = expected[doc] + gamma
        top = torch.topk(weight, evidence.CANDIDATES).indices
        for word in (3, 7):
            on = (d.token_doc == doc) & (d.words[d.token_word] == word)
            seen = torch.bincount(d.token_topic[on], minlength=L).to(torch.float64)
            assert float(seen[[k for k in range(L) if k not in top.tolist()]].sum()) == 0
            p = weight[top] * beta[top, word]
            result = stats.chisquare(seen[top].numpy(), (p / p.sum() * seen.sum()).numpy())
            assert result.pvalue > 1e-3, (doc, word, result)
