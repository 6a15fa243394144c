"""The stream's word counts: exact without a bound, within their stated error with one, and the
vocabulary rule the first vocabulary and every refresh share."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from lda.tokens import words
from lda.vocab import STOP_WORDS, build_vocabulary
from lda.word_counts import WordCounts, next_vocabulary


def _zipf_documents(n: int, seed: int) -> list[list[bytes]]:
    """``n`` documents of 60 tokens drawn from a Zipf law over 20,000 words."""
    rng = np.random.default_rng(seed)
    ranks = rng.zipf(1.3, size=(n, 60)) % 20_000
    return [[f"w{r}".encode() for r in row] for row in ranks]


def test_unbounded_counts_are_document_frequencies() -> None:
    documents = [[b"apple", b"apple", b"pear"], [b"pear"], [b"plum", b"pear"]]
    counts = WordCounts()
    for tokens in documents:
        counts.add(tokens)
    assert counts.counts == Counter({b"pear": 3, b"apple": 1, b"plum": 1})
    assert counts.documents == 3 and counts.floor == 0


def test_bounded_counts_stay_within_the_stated_error() -> None:
    documents = _zipf_documents(3000, seed=7)
    exact, bounded = WordCounts(), WordCounts(capacity=500)
    for tokens in documents:
        exact.add(tokens)
        bounded.add(tokens)
    assert len(bounded) <= 1000
    pairs = sum(exact.counts.values())
    assert 0 < bounded.floor <= pairs / 501  # each cut takes as much from >= 501 counts
    for word, count in exact.counts.items():
        kept = bounded.counts.get(word, 0)
        assert count - bounded.floor <= kept <= count, word
        if count > bounded.floor:
            assert word in bounded.counts, word
    # Cutting keeps the order of what stays: the top words are the exact ones.
    assert bounded.top(100, min_length=1) == exact.top(100, min_length=1)


def test_top_follows_the_first_vocabularys_rule() -> None:
    texts = [
        "The river Zürich flows past Łódź and Kraków.",
        "Kraków and Łódź are cities on a long river.",
        "José went to Kraków by the river.",
        "A cat sat.",
        "A dog ran.",
        "The cat ran, and the river too.",
    ]
    counts = WordCounts()
    for text in texts:
        counts.add(words(text).split())
    # Stop words ("the", "and", "are") and words under 3 characters ("to") never enter;
    # "river", in 4 of 6 documents, is over half of them: ubiquitous.
    top = counts.top(5, stop_words=STOP_WORDS)
    assert top == ["kraków", "cat", "ran", "łódź", "cities"]
    assert build_vocabulary(texts, 5).words == top
    assert "zürich" in counts.top(100, stop_words=STOP_WORDS)


def test_counts_survive_a_checkpoint_and_a_smaller_bound() -> None:
    documents = _zipf_documents(1000, seed=3)
    counts = WordCounts(capacity=800)
    for tokens in documents:
        counts.add(tokens)
    again = WordCounts.from_state_dict(counts.state_dict())
    assert again.counts == counts.counts and again.floor == counts.floor
    assert again.documents == counts.documents and again.capacity == 800
    smaller = WordCounts.from_state_dict(counts.state_dict(), capacity=100)
    assert len(smaller) <= 200 and smaller.floor > counts.floor
    assert smaller.top(20, min_length=1) == counts.top(20, min_length=1)


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        WordCounts(0)


def test_next_vocabulary_keeps_the_staying_words_in_place() -> None:
    assert next_vocabulary(["a", "b", "c", "d"], ["e", "c", "a", "f"]) == ["a", "c", "e", "f"]


def test_vocabulary_words_counted_by_id_agree_with_counting_every_token() -> None:
    from lda.vocab import Vocabulary

    documents = _zipf_documents(2000, seed=11)
    vocabulary = Vocabulary([f"w{r}" for r in range(0, 400, 3)])
    plain, split = WordCounts(capacity=300), WordCounts(capacity=300)
    split.use_vocabulary(vocabulary.words)
    for tokens in documents:
        plain.add(tokens)
        ids = [vocabulary.index[t.decode()] for t in tokens if t.decode() in vocabulary.index]
        split.add_encoded(set(ids), {t for t in tokens if t.decode() not in vocabulary.index})
    # Every count, by id or by string, is within the summary's stated error.
    exact = WordCounts()
    for tokens in documents:
        exact.add(tokens)
    counted = dict(split.items())
    for word, count in exact.counts.items():
        assert count - split.floor <= counted.get(word, 0) <= count
    assert split.floor <= plain.floor
    # Moving to another vocabulary moves the counts with their words.
    before = dict(split.items())
    split.use_vocabulary(["w1", "w2", "w999999"])
    assert dict(split.items()) == before
    assert split.known.tolist() == [before[b"w1"], before[b"w2"], 0]
    again = WordCounts.from_state_dict(split.state_dict())
    assert dict(again.items()) == before and again.known_words == split.known_words


def test_encode_split_is_encode_and_the_rest() -> None:
    from lda.vocab import Vocabulary

    vocabulary = Vocabulary(["zürich", "river", "josé"])
    text = "The river at Zürich; José's river, and Łódź."
    ids, present, others = vocabulary.encode_split(text)
    assert ids == vocabulary.encode(text) == [1, 0, 2, 1] and sorted(present) == [0, 1, 2]
    assert others == {b"the", b"at", b"and", "łódź".encode()}


def test_the_vocabularys_words_take_the_cuts_as_the_summary_would() -> None:
    # Counted by id, a word still loses what each cut since it entered the array took from
    # the summary's words: an incumbent is not favoured over a newcomer.
    documents = [[b"aaa", b"bbb"], [b"aaa", b"ccc"], [b"aaa", b"ddd"], [b"eee", b"fff"]]
    counts = WordCounts(capacity=1)
    counts.use_vocabulary(["aaa"])
    for tokens in documents:
        counts.add_encoded([0] if b"aaa" in tokens else [], {t for t in tokens if t != b"aaa"})
    assert counts.floor == 1 and counts.state_dict()["known"].tolist() == [3]
    assert dict(counts.items())[b"aaa"] == 3 - counts.floor
    counts.use_vocabulary(["bbb"])  # back to the summary with what it would hold there
    assert counts.counts[b"aaa"] == 2 and counts.known.tolist() == [0]
    assert WordCounts.from_state_dict(counts.state_dict()).known_floor.tolist() == [1]
