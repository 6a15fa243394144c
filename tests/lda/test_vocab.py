"""Tokenisation and vocabularies as the published online-LDA experiments define them."""

from __future__ import annotations

from pathlib import Path

import pytest

from lda.vocab import STOP_WORDS, Vocabulary, build_vocabulary, tokenize

SHARED_VOCABULARY = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "vocab-7702.txt"


def test_tokenize_keeps_words_in_any_alphabet_and_splits_at_hyphens():
    text = "Jean-Paul's CAFÉ in Zürich opened in 1999; e-mail: x@y.org"
    assert tokenize(text) == [
        "jean", "paul", "café", "in", "zürich", "opened", "in", "e", "mail", "x", "y", "org",
    ]  # fmt: skip


def test_names_are_kept_whole():
    vocabulary = Vocabulary(["josé", "łódź", "kraków"])
    assert tokenize("José went from Łódź to Kraków") == [
        "josé",
        "went",
        "from",
        "łódź",
        "to",
        "kraków",
    ]
    assert vocabulary.encode("JOSÉ, ŁÓDŹ, KRAKÓW") == [0, 1, 2]


def test_encode_keeps_vocabulary_words_in_order_and_drops_the_rest():
    vocabulary = Vocabulary(["river", "city", "music"])
    assert vocabulary.encode("The River-city: music, MUSIC and rivers.") == [0, 1, 2, 2]
    assert vocabulary.encode("nothing known here") == []


def test_build_vocabulary_applies_length_stop_word_and_document_frequency_rules():
    texts = [
        "the river flows past the old mill and the ox",
        "the river city has a mill",
        "the city music",
        "the river music hall",
        "the organ",
    ]
    vocabulary = build_vocabulary(texts, size=4)
    # "the" is a stop word and in every document; "river" is in 3 of 5 (over half): dropped.
    # "ox", "a" are under 3 letters. Ties in document frequency go alphabetically.
    assert vocabulary.words == ["city", "mill", "music", "flows"]
    assert "river" not in vocabulary.index and "ox" not in vocabulary.index


def test_stop_words_are_compared_folded_and_contractions_stop():
    texts = ["don't go to the Straße", "we'll see the straße", "well, Łódź"]
    vocabulary = build_vocabulary(texts, size=10, stop_words=STOP_WORDS | {"STRASSE"})
    assert vocabulary.words == ["see", "well", "łódź"]  # "we'll" stops, "well" does not
    assert "don't" in STOP_WORDS and "we'll" in STOP_WORDS


def test_vocabulary_files_round_trip_and_bad_files_are_errors(tmp_path):
    path = tmp_path / "vocab.txt"
    words = ["alpha", "beta", "łódź", "ωμέγα", "o'brien", "東京都", "हिन्दी"]
    Vocabulary(words).save(path)
    assert Vocabulary.load(path).words == words
    assert Vocabulary.load(path).encode("Łódź, Ωμέγα and O’Brien") == [2, 3, 4]
    path.write_text("Zürich\nStraße\nZu\u0308rich-x\n", encoding="utf-8")  # folded as tokens
    assert Vocabulary.load(path).words == ["zürich", "strasse", "zürich-x"]
    path.write_text("Alpha\n\nbeta\nalpha\n")
    with pytest.raises(ValueError, match="repeated"):
        Vocabulary.load(path)
    path.write_text("\n\n")
    with pytest.raises(ValueError, match="no words"):
        Vocabulary.load(path)
    with pytest.raises(ValueError, match="no documents"):
        build_vocabulary([], size=3)


@pytest.mark.skipif(not SHARED_VOCABULARY.exists(), reason="no shared/ checkout")
def test_the_published_vocabulary_still_loads_and_encodes():
    vocabulary = Vocabulary.load(SHARED_VOCABULARY)
    assert len(vocabulary) == 7702 and vocabulary.words[:3] == ["writings", "yellow", "four"]
    assert vocabulary.encode("Yellow writings, FOUR!") == [1, 0, 2]
