"""Vocabularies, and the tokens of :mod:`lda.tokens` (words in any alphabet) as Python lists.

Words outside the vocabulary are dropped. A vocabulary is built as in the published online-LDA
experiments: the words in most documents, without short, stop and ubiquitous words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import cast

from lda.tokens import fold, words
from lda.word_counts import WordCounts

# A short English stop list, used only when a vocabulary is built from documents.
STOP_WORDS = frozenset(
    """
    about above after again against all also among and any are because been before being
    below between both but can could did does doing down during each either else ever few for
    from further had has have having her here hers herself him himself his how however into its
    itself just least less many may might more most much must near neither nor not now off once
    one only other our ours ourselves out over own same she should since some still such than
    that the their theirs them themselves then there these they this those though through thus
    too under until upon very was were what when where whether which while who whom whose why
    will with within without would yet you your yours yourself yourselves
    """.split()
) | frozenset(  # contractions stay whole words (lda.tokens), as stop-like as their parts
    """
    aren't can't couldn't didn't doesn't don't hadn't hasn't haven't isn't mustn't shouldn't
    wasn't weren't won't wouldn't i'm i've i'll i'd you're you've you'll you'd we're we've we'll
    we'd they're they've they'll they'd he'll he'd she'll she'd it'll that'll there'll who'll
    """.split()
)


def tokenize(text: str) -> list[str]:
    """The words of ``text`` in order (:mod:`lda.tokens`: runs of letters, marks and digits in
    the normalised, case-folded text; hyphens and any other character split words)."""
    return words(text).decode("utf-8").split()


class Vocabulary:
    """An ordered word list: word ids are row positions (the columns of theta). ``version``
    tells a stream's successive vocabularies apart (0: its first)."""

    def __init__(self, words: Sequence[str], version: int = 0) -> None:
        self.words: list[str] = list(words)
        self.version = version
        self.index: dict[str, int] = {}
        for i, word in enumerate(self.words):
            if not word or word in self.index:
                raise ValueError(f"vocabulary word {i + 1} is empty or repeated: {word!r}")
            self.index[word] = i
        self._utf8_index = {w.encode("utf-8"): i for w, i in self.index.items()}
        self._utf8_words = frozenset(self._utf8_index)

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, text: str) -> list[int]:
        """Word ids of the in-vocabulary tokens of ``text``, in order."""
        return self.encode_counted(text)[0]

    def encode_counted(self, text: str) -> tuple[list[int], int]:
        """(word ids of the in-vocabulary tokens, in order; how many tokens ``text`` has)."""
        tokens = words(text).split()
        ids = map(self._utf8_index.get, tokens)
        return [i for i in ids if i is not None], len(tokens)

    def encode_split(self, text: str) -> tuple[list[int], list[int], set[bytes]]:
        """(word ids of the in-vocabulary tokens, in order; the distinct ones; the distinct
        other words, as UTF-8): a stream's word counts take the last two."""
        tokens = words(text).split()
        get = self._utf8_index.get
        distinct = set(tokens)
        others = distinct.difference(self._utf8_words)
        present = cast(list[int], list(map(get, distinct.difference(others))))
        return [i for i in map(get, tokens) if i is not None], present, others

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        """A vocabulary from a UTF-8 file of one word per line (blank lines ignored), each in
        the form tokens take (:func:`lda.tokens.fold`: ``Zürich`` is ``zürich``)."""
        text = Path(path).read_text(encoding="utf-8")
        entries = [fold(line.strip()) for line in text.splitlines() if line.strip()]
        if not entries:
            raise ValueError(f"vocabulary file {path} has no words")
        return cls(entries)

    def save(self, path: str | Path) -> None:
        """Write one word per line, in id order, as UTF-8."""
        Path(path).write_text("\n".join(self.words) + "\n", encoding="utf-8")


def build_vocabulary(
    texts: Iterable[str],
    size: int,
    *,
    min_length: int = 3,
    max_document_fraction: float = 0.5,
    stop_words: frozenset[str] = STOP_WORDS,
) -> Vocabulary:
    """The ``size`` words found in most documents, skipping short (in characters), stop and
    ubiquitous words (:meth:`lda.word_counts.WordCounts.top`, the rule every later vocabulary
    of a stream follows too)."""
    counts = WordCounts()
    for text in texts:
        counts.add(words(text).split())
    if counts.documents == 0:
        raise ValueError("cannot build a vocabulary from no documents")
    chosen = counts.top(
        size,
        min_length=min_length,
        max_document_fraction=max_document_fraction,
        stop_words=stop_words,
    )
    if not chosen:
        raise ValueError("no word qualifies for the vocabulary")
    return Vocabulary(chosen)
