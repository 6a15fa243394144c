"""Vocabulary and tokenisation as in the published online-LDA experiments.

Lowercase, ``-`` to space, runs of a–z; words outside the vocabulary are dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

# bytes.translate table: a-z kept, every other byte (UTF-8's multi-byte ones too) a space, so
# splitting the translated lowercase UTF-8 gives exactly the runs of [a-z]+, in C.
_A_TO_Z = bytes(b if 0x61 <= b <= 0x7A else 0x20 for b in range(256))

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
)


def _words(text: str) -> list[bytes]:
    """The runs of a–z in lowercased ``text``, as ASCII bytes (twice as fast as a regex)."""
    return text.lower().encode("utf-8", "surrogatepass").translate(_A_TO_Z).split()


def tokenize(text: str) -> list[str]:
    """Lowercased a–z word runs of ``text`` (hyphens and any other non-letter split words)."""
    return [word.decode("ascii") for word in _words(text)]


class Vocabulary:
    """An ordered word list: word ids are row positions (the columns of theta)."""

    def __init__(self, words: Sequence[str]) -> None:
        self.words: list[str] = list(words)
        self.index: dict[str, int] = {}
        for i, word in enumerate(self.words):
            if not word or word in self.index:
                raise ValueError(f"vocabulary word {i + 1} is empty or repeated: {word!r}")
            self.index[word] = i
        self._ascii_index = {w.encode("utf-8"): i for w, i in self.index.items()}

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, text: str) -> list[int]:
        """Word ids of the in-vocabulary tokens of ``text``, in order."""
        return self.encode_counted(text)[0]

    def encode_counted(self, text: str) -> tuple[list[int], int]:
        """(word ids of the in-vocabulary tokens, in order; how many tokens ``text`` has)."""
        words = _words(text)
        ids = map(self._ascii_index.get, words)
        return [i for i in ids if i is not None], len(words)

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        """A vocabulary from a file of one word per line (blank lines ignored)."""
        text = Path(path).read_text(encoding="utf-8")
        words = [line.strip().lower() for line in text.splitlines() if line.strip()]
        if not words:
            raise ValueError(f"vocabulary file {path} has no words")
        return cls(words)

    def save(self, path: str | Path) -> None:
        """Write one word per line, in id order."""
        Path(path).write_text("\n".join(self.words) + "\n", encoding="utf-8")


def build_vocabulary(
    texts: Iterable[str],
    size: int,
    *,
    min_length: int = 3,
    max_document_fraction: float = 0.5,
    stop_words: frozenset[str] = STOP_WORDS,
) -> Vocabulary:
    """The ``size`` words found in most documents, skipping short, stop and ubiquitous words."""
    document_frequency: Counter[str] = Counter()
    n_documents = 0
    for text in texts:
        n_documents += 1
        document_frequency.update(set(tokenize(text)))
    if n_documents == 0:
        raise ValueError("cannot build a vocabulary from no documents")
    limit = max_document_fraction * n_documents
    candidates = [
        (-count, word)
        for word, count in document_frequency.items()
        if len(word) >= min_length and word not in stop_words and count <= limit
    ]
    candidates.sort()
    words = [word for _, word in candidates[:size]]
    if not words:
        raise ValueError("no word qualifies for the vocabulary")
    return Vocabulary(words)
