"""The tokeniser, one definition for the learner (``lda.vocab``) and ``/infer``: texts to words,
and to word ids in compiled code.

A word is a run of letters, combining marks and decimal digits, in the NFKC-normalised,
case-folded text, with at least one letter; an apostrophe between two of those characters
stays in the word (``don't``, ``o'brien``), a final ``'s`` is dropped (``children's`` is
``children``), and every other character separates words (docs/model.md, "Tokens"). Python
normalises and case-folds (C; skipped for ASCII texts); a numba kernel classifies the UTF-8
bytes against a table of code points and writes every byte that is not part of a word as a
space, keeping the length; a second kernel finds the words and looks each up in an
open-addressing table of the vocabulary's words, without the GIL and without a bytes object and
a dict lookup per token (in Python, that lookup was most of a batch's encoding).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from functools import cache

import numba
import numpy as np

SPACE = 0x20
APOSTROPHE = 0x27
# Character classes of the table the kernel reads (a code point's class).
OTHER, LETTER, MARK, DIGIT, QUOTE = 0, 1, 2, 3, 4
# Code points past these ranges are no letter, mark or digit (Unicode 15; tests check the
# running Python's tables), so the table is built from these alone, in a fraction of the time.
_RANGES = ((0, 0x40000), (0xE0000, 0xE1000))
# Each ASCII byte as it stays in a word: capitals lowercased, letters, digits and the
# apostrophe kept (the second pass decides the apostrophe), everything else a space.
ASCII_WORDS = np.array(
    [
        b + 0x20 if 0x41 <= b <= 0x5A else b if chr(b).isalnum() or b == APOSTROPHE else SPACE
        for b in range(128)
    ],
    dtype=np.uint8,
)
_OFFSET = np.uint64(14695981039346656037)  # FNV-1a, 64 bits
_PRIME = np.uint64(1099511628211)


def _class_of(code: int) -> int:
    """The kernel's class of one code point (an ASCII apostrophe is QUOTE)."""
    if code == APOSTROPHE:
        return QUOTE
    category = unicodedata.category(chr(code))
    if category[0] == "L":
        return LETTER
    if category[0] == "M":
        return MARK
    return DIGIT if category == "Nd" else OTHER


@cache
def classes() -> np.ndarray:
    """(0x110000,) uint8: each code point's class, from the running Python's Unicode tables
    (built once, on first use, so that importing the module stays cheap)."""
    table = np.zeros(0x110000, dtype=np.uint8)
    for first, last in _RANGES:
        table[first:last] = np.frombuffer(bytes(map(_class_of, range(first, last))), np.uint8)
    return table


def fold(text: str) -> str:
    """``text`` NFKC-normalised and case-folded (and normalised again, as case folding can
    undo it), with the typographic apostrophe as ``'``: the form words are compared in."""
    text = unicodedata.normalize("NFKC", text.replace("\u2019", "'")).casefold()
    return unicodedata.normalize("NFKC", text)


def _folded_utf8(text: str) -> bytes:
    """``fold(text)`` as UTF-8 but for ASCII letters' case, which the kernel folds: an ASCII
    text skips the Python passes, and the others skip the costly normalisation when the quick
    check passes (a no-break space, the most common character it stops at, is replaced first:
    NFKC makes it a space too)."""
    if not text.isascii():
        text = text.replace("\u2019", "'").replace("\xa0", " ")
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
        text = text.casefold()
        if not unicodedata.is_normalized("NFKC", text):
            text = unicodedata.normalize("NFKC", text)
    return text.encode("utf-8", "surrogatepass")


@numba.njit(cache=True, nogil=True)
def _code_point(data: np.ndarray, i: int, end: int) -> tuple[int, int]:
    """(code point, length in bytes) of the UTF-8 sequence at ``data[i]``; an invalid or cut
    sequence is one byte of code point 0xFFFD (no word character)."""
    lead = int(data[i])
    if lead < 0x80:
        return lead, 1
    if lead >= 0xF0:
        n, code = 4, lead & 0x07
    elif lead >= 0xE0:
        n, code = 3, lead & 0x0F
    elif lead >= 0xC0:
        n, code = 2, lead & 0x1F
    else:
        return 0xFFFD, 1
    if i + n > end:
        return 0xFFFD, 1
    for j in range(i + 1, i + n):
        code = (code << 6) | (int(data[j]) & 0x3F)
    return (code, n) if code < 0x110000 else (0xFFFD, 1)


@numba.njit(cache=True, nogil=True)
def _joins(kind: np.ndarray, i: int, start: int, end: int) -> bool:
    """Whether the apostrophe at ``i`` stands between two word characters (and so stays)."""
    return start < i < end - 1 and LETTER <= kind[i - 1] <= DIGIT and LETTER <= kind[i + 1] <= DIGIT


@numba.njit(cache=True, nogil=True)
def _possessive(data: np.ndarray, kind: np.ndarray, i: int, start: int, end: int) -> bool:
    """Whether the apostrophe at ``i`` begins a word's final 's."""
    if not (_joins(kind, i, start, end) and data[i + 1] == 0x73):
        return False
    after = i + 2
    return (
        after == end
        or kind[after] == OTHER
        or (kind[after] == QUOTE and not _joins(kind, after, start, end))
    )


@numba.njit(cache=True, nogil=True)
def _clean_one(
    data: np.ndarray,
    start: int,
    end: int,
    table: np.ndarray,
    ascii_words: np.ndarray,
    kind: np.ndarray,
) -> None:
    """Words of ``data[start:end]`` (folded UTF-8) in place: ASCII capitals lowercased, every
    other byte a space. A first pass maps each byte by its character's class; a second visits
    only marks, digits and apostrophes, the rare bytes whose fate depends on their word."""
    i = start
    while i < end:
        byte = data[i]
        if byte < 0x80:
            kind[i] = table[byte]
            data[i] = ascii_words[byte]
            i += 1
        else:
            code, n = _code_point(data, i, end)
            for j in range(i, i + n):
                kind[j] = table[code]
                if table[code] == OTHER:
                    data[j] = SPACE
            i += n
    for i in range(start, end):
        k = kind[i]
        if k < MARK:
            continue
        if k == QUOTE:
            if _possessive(data, kind, i, start, end):
                data[i] = data[i + 1] = SPACE
            elif not _joins(kind, i, start, end):
                data[i] = SPACE
        elif (
            i == start
            or kind[i - 1] == OTHER
            or (kind[i - 1] == QUOTE and not _joins(kind, i - 1, start, end))
        ):  # a word that begins with a mark or digit: blank it unless a letter follows
            j, letters = i, 0
            while j < end and (
                LETTER <= kind[j] <= DIGIT or (kind[j] == QUOTE and _joins(kind, j, start, end))
            ):
                if kind[j] == QUOTE and _possessive(data, kind, j, start, end):
                    break
                letters += kind[j] == LETTER
                j += 1
            if letters == 0:
                data[i:j] = SPACE


@numba.njit(cache=True, nogil=True)
def _clean(data: np.ndarray, starts: np.ndarray, table: np.ndarray) -> None:
    """:func:`_clean_one` on each text ``data[starts[d]:starts[d + 1]]`` (no word runs from one
    text into the next)."""
    kind = np.empty(data.shape[0], dtype=np.uint8)
    for d in range(starts.shape[0] - 1):
        _clean_one(data, starts[d], starts[d + 1], table, ASCII_WORDS, kind)


def _cleaned(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, starts): the texts' words, folded UTF-8 with spaces between, back to back; text
    d is ``bytes[starts[d]:starts[d + 1]]``."""
    folded = [_folded_utf8(text) for text in texts]
    lengths = np.fromiter(map(len, folded), dtype=np.int64, count=len(folded))
    starts = np.zeros(len(folded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    data = np.frombuffer(bytearray(b"".join(folded)), dtype=np.uint8)
    _clean(data, starts, classes())
    return data, starts


def words(text: str) -> bytes:
    """The words of ``text`` as UTF-8, separated by spaces (``.split()`` lists them)."""
    return _cleaned([text])[0].tobytes()


@numba.njit(cache=True, nogil=True)
def _hash(data: np.ndarray, start: int, end: int) -> np.uint64:
    value = _OFFSET
    for i in range(start, end):
        value = (value ^ np.uint64(data[i])) * _PRIME
    return value


@numba.njit(cache=True, nogil=True)
def _find(
    data: np.ndarray,
    start: int,
    end: int,
    chars: np.ndarray,
    offsets: np.ndarray,
    slots: np.ndarray,
) -> int:
    """The id of the word ``data[start:end]``, or -1 when it is not in the table."""
    mask = slots.shape[0] - 1
    slot = np.int64(_hash(data, start, end) & np.uint64(mask))
    while True:
        word = slots[slot]
        if word < 0:
            return -1
        if offsets[word + 1] - offsets[word] == end - start:
            same = True
            base = offsets[word] - start
            for i in range(start, end):
                if chars[base + i] != data[i]:
                    same = False
                    break
            if same:
                return word
        slot = (slot + 1) & mask


@numba.njit(cache=True)
def _fill(chars: np.ndarray, offsets: np.ndarray, usable: np.ndarray, slots: np.ndarray) -> None:
    mask = slots.shape[0] - 1
    for word in range(offsets.shape[0] - 1):
        if usable[word]:
            slot = np.int64(_hash(chars, offsets[word], offsets[word + 1]) & np.uint64(mask))
            while slots[slot] >= 0:
                slot = (slot + 1) & mask
            slots[slot] = word


@numba.njit(cache=True, nogil=True)
def _encode(
    data: np.ndarray,
    starts: np.ndarray,
    chars: np.ndarray,
    offsets: np.ndarray,
    slots: np.ndarray,
    ids: np.ndarray,
    id_starts: np.ndarray,
    tokens: np.ndarray,
) -> None:
    found = 0
    for d in range(starts.shape[0] - 1):
        id_starts[d] = found
        i, end, n = starts[d], starts[d + 1], 0
        while i < end:
            while i < end and data[i] == SPACE:
                i += 1
            if i == end:
                break
            first = i
            while i < end and data[i] != SPACE:
                i += 1
            n += 1
            word = _find(data, first, i, chars, offsets, slots)
            if word >= 0:
                ids[found] = word
                found += 1
        tokens[d] = n
    id_starts[starts.shape[0] - 1] = found


class WordIndex:
    """A vocabulary's words as the kernel looks them up (only a word that is one token of
    itself, as :func:`words` finds them, can be found)."""

    def __init__(self, words: Sequence[str]) -> None:
        encoded = [word.encode("utf-8") for word in words]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        self.offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.offsets[1:])
        self.chars = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        cleaned, starts = _cleaned(words)
        found = cleaned.tobytes()
        usable = np.fromiter(
            (
                bool(word) and found[first:last] == word
                for word, first, last in zip(encoded, starts[:-1], starts[1:], strict=True)
            ),
            dtype=np.bool_,
            count=len(encoded),
        )
        size = 1 << max(4, (2 * len(encoded)).bit_length())  # at most half full
        self.slots = np.full(size, -1, dtype=np.int64)
        _fill(self.chars, self.offsets, usable, self.slots)

    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(word ids, starts, tokens): text d's in-vocabulary word ids in order are
        ``ids[starts[d]:starts[d + 1]]`` and it has ``tokens[d]`` tokens, as
        ``Vocabulary.encode_counted`` counts them."""
        data, starts = _cleaned(texts)
        ids = np.empty(data.shape[0] // 2 + len(texts) + 1, dtype=np.int64)  # >= tokens
        id_starts = np.empty(len(texts) + 1, dtype=np.int64)
        tokens = np.empty(len(texts), dtype=np.int64)
        _encode(data, starts, self.chars, self.offsets, self.slots, ids, id_starts, tokens)
        return ids[: id_starts[-1]], id_starts, tokens
