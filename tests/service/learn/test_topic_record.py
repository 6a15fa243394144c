"""The topics' record beside the chain: the articles behind each topic (ranked by aged share),
the stream's word counts and topic sizes, and its uniform sample of documents."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from service.learn.stream_tally import StreamTally
from service.learn.topic_articles import MIN_TOKENS, TopicArticles
from service.learn.topic_record import RecordConfig, TopicRecord


def _counts(shares: list[list[float]], length: int = 100) -> torch.Tensor:
    return torch.tensor(shares, dtype=torch.float64) * length


def _refs(*names: str) -> list[tuple[str, str, str]]:
    return [(name, str(i), "wikipedia") for i, name in enumerate(names)]


def test_each_topic_keeps_the_articles_with_the_largest_share() -> None:
    articles = TopicArticles(n_topics=2, keep=2, half_life=10**9)
    articles.offer(_counts([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]]), _refs("a", "b", "c"), 3)
    articles.offer(_counts([[0.7, 0.3], [0.05, 0.95]]), _refs("d", "e"), 5)
    rows = articles.rows(5)
    assert [r[0] for r in rows[0]] == ["a", "d"]
    assert [r[0] for r in rows[1]] == ["e", "b"]
    assert rows[0][0][3] == pytest.approx(0.9) and rows[0][0][4] == 3
    # Only what is listed is held: O(K x N) however long the stream.
    assert len(articles.articles) == 4


def test_a_short_article_is_never_listed() -> None:
    articles = TopicArticles(n_topics=2, keep=3, half_life=10**9)
    articles.offer(_counts([[1.0, 0.0], [0.6, 0.4]], length=MIN_TOKENS - 1), _refs("s", "t"), 2)
    assert articles.rows(2) == [[], []]


def test_old_articles_age_out_as_the_stream_moves_on() -> None:
    """Halving every half_life documents: an article of share 0.9 learned two half-lives ago
    (aged 0.225) gives way to a fresh one of 0.5."""
    articles = TopicArticles(n_topics=2, keep=1, half_life=1000)
    articles.offer(_counts([[0.9, 0.1]]), _refs("old"), 0)
    articles.offer(_counts([[0.5, 0.5]]), _refs("new"), 2000)
    assert [r[0] for r in articles.rows(2000)[0]] == ["new"]
    kept = TopicArticles(n_topics=2, keep=1, half_life=1000)
    kept.offer(_counts([[0.9, 0.1]]), _refs("old"), 0)
    kept.offer(_counts([[0.5, 0.5]]), _refs("new"), 500)  # aged 0.64 still beats 0.5
    assert [r[0] for r in kept.rows(500)[0]] == ["old"]


def test_a_topic_that_changed_forgets_what_it_meant_and_labels_that_moved_carry_theirs() -> None:
    record = TopicRecord(RecordConfig(2, 10**9, 10, seed=0), n_topics=2, n_words=5)
    words = torch.tensor([0, 1, 2])
    record.learned(words, _counts([[0.9, 0.1], [0.1, 0.9]]), _refs("a", "b"), 2)
    record.evaluated(2, {"coherence": [0.1, 0.1], "drift": None, "matched": None})
    record.learned(words, _counts([[0.8, 0.2], [0.3, 0.7]]), _refs("c", "d"), 4)
    # Topic 0 changed a lot, topic 1 did not; labels stayed.
    record.evaluated(4, {"drift": [0.9, 0.01], "matched": [0, 1]})
    rows = record.article_rows(4)
    assert [r[0] for r in rows[0]] == ["c"] and [r[0] for r in rows[1]] == ["b", "d"]
    size_before = record.sizes()
    record.moved([1, 0])  # the labels swapped
    record.evaluated(5, {"drift": [0.01, 0.01], "matched": [1, 0]})
    rows = record.article_rows(5)
    assert [r[0] for r in rows[0]] == ["b", "d"] and [r[0] for r in rows[1]] == ["c"]
    assert record.sizes() == size_before[::-1]


def test_the_record_survives_its_state_dict() -> None:
    config = RecordConfig(3, 5000, 4, seed=1)
    record = TopicRecord(config, n_topics=2, n_words=6)
    record.learned(torch.tensor([0, 5, 5]), _counts([[0.3, 0.7], [0.9, 0.1]]), _refs("x", "y"), 2)
    again = TopicRecord(config, n_topics=2, n_words=6)
    again.load_state_dict(record.state_dict())
    assert again.article_rows(2) == record.article_rows(2) and again.sizes() == record.sizes()
    assert np.array_equal(again.figures().term_frequency, record.figures().term_frequency)
    other = TopicRecord(config, n_topics=3, n_words=6)  # another K: starts empty
    other.load_state_dict(record.state_dict())
    assert other.article_rows(2) == [[], [], []]


def test_word_counts_and_topic_sizes_follow_the_minibatches() -> None:
    tally = StreamTally(n_topics=2, n_words=4, sample=10, half_life=10**9, seed=0)
    tally.learned(torch.tensor([0, 0, 3]), torch.tensor([[2.0, 0.0], [0.5, 0.5]]))
    tally.learned(torch.tensor([1, 3]), torch.tensor([[0.0, 2.0]]))
    assert tally.term_frequency.tolist() == [2.0, 1.0, 0.0, 2.0]
    assert tally.topic_size == pytest.approx([2.5 / 5, 2.5 / 5])
    figures = tally.figures()
    assert figures.doc_lengths.tolist() == [2, 1, 2]
    assert figures.doc_topic.sum(axis=1) == pytest.approx([1.0, 1.0, 1.0])


def test_sizes_follow_a_stream_whose_topics_shift() -> None:
    """With a half-life of 100 documents, 1,000 documents all of topic 1 after 1,000 of topic
    0 leave topic 0 with about 2^-10 of the weight."""
    tally = StreamTally(n_topics=2, n_words=3, sample=0, half_life=100, seed=0)
    for topic in (0, 1):
        for _ in range(100):
            counts = torch.zeros(10, 2, dtype=torch.float64)
            counts[:, topic] = 5.0
            tally.learned(torch.zeros(50, dtype=torch.int64), counts)
    assert tally.topic_size[0] == pytest.approx(2.0**-10, rel=0.05)


def test_the_document_sample_is_uniform_over_the_stream() -> None:
    """Algorithm R: 20,000 documents through a sample of 100, over 200 seeds, hold each
    tenth of the stream in equal parts (chi-square at 9 degrees of freedom, p = 0.001: 27.9);
    a sample that kept the first or the last documents fails it."""
    held = np.zeros(10)
    for seed in range(200):
        tally = StreamTally(n_topics=1, n_words=1, sample=100, half_life=10**9, seed=seed)
        for start in range(0, 20_000, 500):
            lengths = torch.arange(start, start + 500, dtype=torch.float64) + 1
            tally.learned(torch.zeros(1, dtype=torch.int64), lengths.unsqueeze(1))
        assert tally.doc_lengths.size == 100
        held += np.bincount((tally.doc_lengths - 1) // 2000, minlength=10)
    expected = held.sum() / 10
    assert ((held - expected) ** 2 / expected).sum() < 27.9
