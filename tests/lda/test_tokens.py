"""The tokeniser's one definition: the learner's tokens (``tokenize``, ``Vocabulary``) and
``/infer``'s compiled ones (``WordIndex``) are the same words, the words docs/model.md defines."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lda.tokens import _RANGES, DIGIT, LETTER, MARK, WordIndex, classes, fold, words
from lda.vocab import Vocabulary, tokenize

WORD_CATEGORIES = {"L", "M"}


def is_word_character(char: str) -> bool:
    category = unicodedata.category(char)
    return category[0] in WORD_CATEGORIES or category == "Nd"


def reference(text: str) -> list[str]:
    """The definition, character by character: in the folded text, runs of letters, marks and
    digits (an apostrophe joins two of them), a final 's dropped, only runs with a letter."""
    folded = unicodedata.normalize(
        "NFKC", unicodedata.normalize("NFKC", text.replace("\u2019", "'")).casefold()
    )
    kept = [
        char
        if is_word_character(char)
        or (
            char == "'"
            and 0 < i < len(folded) - 1
            and is_word_character(folded[i - 1])
            and is_word_character(folded[i + 1])
        )
        else " "
        for i, char in enumerate(folded)
    ]
    found = []
    for word in "".join(kept).split(" "):
        if word.endswith("'s"):
            word = word[:-2]
        if any(unicodedata.category(char)[0] == "L" for char in word):
            found.append(word)
    return found


CASES = [
    ("Zürich, Zu\u0308rich and ZU\u0308RICH", ["zürich", "zürich", "and", "zürich"]),
    ("José met Müller in Łódź, Kraków", ["josé", "met", "müller", "in", "łódź", "kraków"]),
    ("Αθήνα ΣΟΦΟΣ σοφός", ["αθήνα", "σοφοσ", "σοφόσ"]),
    ("Москва — столица России", ["москва", "столица", "россии"]),
    ("Straße STRASSE ﬁne", ["strasse", "strasse", "fine"]),
    ("ＦＵＬＬ－ｗｉｄｔｈ　ｌｅｔｔｅｒｓ", ["full", "width", "letters"]),
    ("東京都に行く。北京", ["東京都に行く", "北京"]),
    ("हिन्दी भाषा, १९४७", ["हिन्दी", "भाषा"]),
    ("don't O’Brien children's players' 'quoted' rock'n'roll", [
        "don't", "o'brien", "children", "players", "quoted", "rock'n'roll",
    ]),
    ("MP3 covid-19 1990s 4th 2024 km² ½", ["mp3", "covid", "1990s", "4th", "km2"]),
    ("e-mail x@y.org snake_case", ["e", "mail", "x", "y", "org", "snake", "case"]),
    ("The THE the\u00a0the", ["the", "the", "the", "the"]),  # stop words are tokens too
    ("\u0301 lone mark, \udcff lone surrogate", ["lone", "mark", "lone", "surrogate"]),
    ("", []),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_the_learner_the_scorer_and_infer_find_the_same_words(text, expected) -> None:
    assert tokenize(text) == expected == reference(text)
    vocabulary_words = sorted({w for _, found in CASES for w in found} - {"the", "in", "x"})
    vocabulary, index = Vocabulary(vocabulary_words), WordIndex(vocabulary_words)
    ids = [vocabulary.index[w] for w in expected if w in vocabulary.index]
    assert vocabulary.encode_counted(text) == (ids, len(expected))  # learner and held-out
    found, starts, tokens = index.encode([text, text])  # /infer
    assert found[starts[0] : starts[1]].tolist() == found[starts[1] : starts[2]].tolist() == ids
    assert tokens.tolist() == [len(expected)] * 2


ALPHABET = (
    "aZzs S-'’9 \n\t.\u00a0é\u00c9e\u0301\u0301\u212a\u0130ßẞ\u03a3ςΐ\u0344ǅﬁＡ０²½"
    "東ー\u093f\u094d२ʼ\u1100\u1161=\u0338\ud800\U0001f600\u0391Ж"
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(ALPHABET), max_size=30), max_size=4))
def test_any_text_gives_the_reference_words_on_every_path(texts: list[str]) -> None:
    expected = [reference(text) for text in texts]
    assert [tokenize(text) for text in texts] == expected
    vocabulary_words = sorted({w for found in expected for w in found}) or ["word"]
    vocabulary, index = Vocabulary(vocabulary_words), WordIndex(vocabulary_words)
    ids, starts, tokens = index.encode(texts)
    for d, found in enumerate(expected):
        assert vocabulary.encode_counted(texts[d]) == (
            [vocabulary.index[w] for w in found],
            len(found),
        )
        assert ids[starts[d] : starts[d + 1]].tolist() == vocabulary.encode(texts[d])
        assert tokens[d] == len(found)


def test_folding_twice_changes_nothing_so_saved_words_load_as_they_were() -> None:
    for first, last in _RANGES:
        for code in range(first, min(last, 0x32000)):
            once = fold(chr(code))
            assert fold(once) == once, hex(code)


def test_a_word_is_a_token_of_itself_only_when_it_can_be_found() -> None:
    vocabulary_words = ["łódź", "o'brien", "children's", "Capital", "two words", "1990", "mp3"]
    index = WordIndex(vocabulary_words)
    ids, _, _ = index.encode(["łódź o'brien children's capital two words 1990 mp3"])
    assert ids.tolist() == [0, 1, 6]
    assert words("Łódź").decode() == "łódź"


def test_the_class_table_covers_every_letter_mark_and_digit() -> None:
    table = classes()
    covered = [code for first, last in _RANGES for code in range(first, last)]
    for code in set(range(0x110000)) - set(covered):
        assert not is_word_character(chr(code)), hex(code)
    assert table[ord("é")] == LETTER and table[0x0301] == MARK and table[0x0966] == DIGIT
