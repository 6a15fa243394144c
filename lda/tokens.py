"""Texts to word ids for /infer in compiled code: ``Vocabulary.encode_counted`` for a batch.

The learner's tokens are the runs of a-z in the lowercased UTF-8 text (``lda.vocab``). Python
lowercases and maps every other byte to a space (C, fast); a numba kernel then finds the runs
and looks each up in an open-addressing table of the vocabulary's words, without the GIL and
without a bytes object and a dict lookup per token (in Python, that lookup was most of a batch's
encoding).
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

# bytes.translate table: a-z kept, every other byte (UTF-8's multi-byte ones too) a space.
LETTERS = bytes(b if 0x61 <= b <= 0x7A else 0x20 for b in range(256))
SPACE = 0x20
_OFFSET = np.uint64(14695981039346656037)  # FNV-1a, 64 bits
_PRIME = np.uint64(1099511628211)


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
    """A vocabulary's words as the kernel looks them up (only words of a-z can be tokens)."""

    def __init__(self, words: Sequence[str]) -> None:
        encoded = [word.encode("utf-8") for word in words]
        lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        self.offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.offsets[1:])
        self.chars = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        usable = np.fromiter(
            (bool(word) and word.translate(LETTERS) == word for word in encoded),
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
        letters = [
            text.lower().encode("utf-8", "surrogatepass").translate(LETTERS) for text in texts
        ]
        lengths = np.fromiter(map(len, letters), dtype=np.int64, count=len(letters))
        starts = np.zeros(len(letters) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        data = np.frombuffer(b"".join(letters), dtype=np.uint8)
        ids = np.empty(data.shape[0] // 2 + len(letters) + 1, dtype=np.int64)  # >= tokens
        id_starts = np.empty(len(letters) + 1, dtype=np.int64)
        tokens = np.empty(len(letters), dtype=np.int64)
        _encode(data, starts, self.chars, self.offsets, self.slots, ids, id_starts, tokens)
        return ids[: id_starts[-1]], id_starts, tokens
