"""NPMI coherence and topic diversity: by hand, and against gensim's CoherenceModel."""

from __future__ import annotations

import math

import pytest
import torch

from lda.evaluation.coherence import npmi_coherence, npmi_coherence_of_tokens, topic_diversity

DOCS = [[0, 1, 2], [0, 1], [0, 3], [2, 3], [1, 4]]


def npmi_by_hand(a: int, b: int, documents: list[list[int]]) -> float:
    n = len(documents)
    pa = sum(a in d for d in documents) / n
    pb = sum(b in d for d in documents) / n
    pab = sum(a in d and b in d for d in documents) / n + 1e-12
    return math.log(pab / (pa * pb)) / -math.log(pab)


def test_npmi_of_a_hand_worked_example() -> None:
    # p(0) = 3/5, p(1) = 3/5, p(0, 1) = 2/5: log((2/5) / (9/25)) / -log(2/5) = 0.114986
    got = npmi_coherence(torch.tensor([[0, 1], [0, 4]]), DOCS)
    assert got[0].item() == pytest.approx(math.log(10 / 9) / -math.log(2 / 5), abs=1e-9)
    assert got[0].item() == pytest.approx(0.114986, abs=1e-6)
    # 0 and 4 never share a document: log(eps / (3/5 * 1/5)) / -log(eps), near -1.
    never = math.log(1e-12 / (3 / 25)) / -math.log(1e-12)
    assert got[1].item() == pytest.approx(never, abs=1e-9) and -1 < never < -0.9


def test_npmi_is_the_mean_over_pairs() -> None:
    got = npmi_coherence(torch.tensor([[0, 1, 2]]), DOCS)
    pairs = [(0, 1), (0, 2), (1, 2)]
    want = sum(npmi_by_hand(a, b, DOCS) for a, b in pairs) / 3
    assert got.item() == pytest.approx(want, abs=1e-9)


def test_a_word_missing_from_every_document_scores_minus_one() -> None:
    got = npmi_coherence(torch.tensor([[0, 9]]), DOCS)
    assert got.item() == -1.0


def test_diversity_counts_distinct_words() -> None:
    assert topic_diversity(torch.tensor([[0, 1], [1, 2]])) == 0.75
    assert topic_diversity(torch.tensor([[0, 1], [2, 3]])) == 1.0


def test_npmi_agrees_with_gensim_c_npmi_on_a_small_corpus() -> None:
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    g = torch.Generator().manual_seed(5)
    documents = [torch.randint(0, 12, (int(n),), generator=g).tolist() for n in
                 torch.randint(3, 9, (40,), generator=g)]  # fmt: skip
    texts = [[f"w{i}" for i in doc] for doc in documents]
    dictionary = Dictionary(texts)
    topics = torch.tensor([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [0, 5, 10, 3]])
    model = CoherenceModel(
        topics=[[f"w{i}" for i in row] for row in topics.tolist()],
        texts=texts,
        dictionary=dictionary,
        coherence="c_npmi",
        window_size=max(len(d) for d in documents),  # the whole document is the window
    )
    want = torch.tensor(model.get_coherence_per_topic(), dtype=torch.float64)
    torch.testing.assert_close(npmi_coherence(topics, documents), want, rtol=0, atol=1e-9)


def test_npmi_of_tokens_is_npmi_of_the_same_documents() -> None:
    """The shaper's token form reads the same presence as the document lists: equal figures."""
    g = torch.Generator().manual_seed(3)
    lengths = torch.randint(1, 30, (40,), generator=g)
    words = torch.randint(0, 25, (int(lengths.sum()),), generator=g)
    documents = [d.tolist() for d in torch.split(words, lengths.tolist())]
    top = torch.stack([torch.randperm(30, generator=g)[:6] for _ in range(5)])  # 25..29 unseen
    expected = npmi_coherence(top, documents)
    assert torch.allclose(npmi_coherence_of_tokens(top, words, lengths), expected, rtol=0, atol=0)
