"""The map from one vocabulary to the next that :meth:`lda.model.StreamingLDA.remap_vocabulary`
takes: for every new word, its old column, or -1 for a word that enters."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def remap_indices(old_words: Sequence[str], new_words: Sequence[str]) -> torch.Tensor:
    """(len(new_words),) int64: ``keep[j]`` the index of ``new_words[j]`` in ``old_words``, or
    -1 when it is not there. Words must be distinct in each list (a column per word)."""
    for name, words in (("old", old_words), ("new", new_words)):
        if len(set(words)) != len(words):
            raise ValueError(f"the {name} vocabulary lists a word twice")
    column = {word: i for i, word in enumerate(old_words)}
    return torch.tensor([column.get(word, -1) for word in new_words], dtype=torch.int64)
