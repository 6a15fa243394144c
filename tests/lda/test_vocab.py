"""Tokenisation and vocabularies as the published online-LDA experiments define them."""

from __future__ import annotations

import random
import re

import pytest

from lda.vocab import Vocabulary, build_vocabulary, tokenize


def test_tokenize_lowercases_splits_hyphens_and_keeps_only_a_to_z_runs():
    text = "Jean-Paul's CAFÉ opened in 1999; e-mail: x@y.org"
    assert tokenize(text) == [
        "jean",
        "paul",
        "s",
        "caf",
        "opened",
        "in",
        "e",
        "mail",
        "x",
        "y",
        "org",
    ]


def test_tokenize_equals_the_regex_definition_on_any_unicode():
    """The byte-level tokenizer is an optimisation of lowercase + ``[a-z]+``: same words on
    text mixing ASCII, Latin-1, case-changing letters (Kelvin sign, dotted I), lone surrogates
    and astral characters."""
    alphabet = "aZz -'9\u00e9\u00c9\u212a\u0130\u00df\ud800\U0001f600\u0391\n\t"
    rng = random.Random(0)
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        assert tokenize(text) == re.findall("[a-z]+", text.lower()), repr(text)


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


def test_vocabulary_files_round_trip_and_bad_files_are_errors(tmp_path):
    path = tmp_path / "vocab.txt"
    Vocabulary(["alpha", "beta"]).save(path)
    assert Vocabulary.load(path).words == ["alpha", "beta"]
    path.write_text("Alpha\n\nbeta\nalpha\n")
    with pytest.raises(ValueError, match="repeated"):
        Vocabulary.load(path)
    path.write_text("\n\n")
    with pytest.raises(ValueError, match="no words"):
        Vocabulary.load(path)
    with pytest.raises(ValueError, match="no documents"):
        build_vocabulary([], size=3)
