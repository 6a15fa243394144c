"""Documents as flat token tensors, the form every Gibbs kernel and estimator reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Batch:
    """Tokens of several documents: ``words[offsets[d]:offsets[d+1]]`` is document d."""

    words: torch.Tensor  # (T,) int64 word ids
    offsets: torch.Tensor  # (n+1,) int64, on the CPU

    @property
    def n_documents(self) -> int:
        return int(self.offsets.numel()) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.words.numel())

    @property
    def lengths(self) -> torch.Tensor:
        return self.offsets[1:] - self.offsets[:-1]

    def document_index(self) -> torch.Tensor:
        """(T,) the document of each token, on the words' device."""
        return torch.repeat_interleave(
            torch.arange(self.n_documents, device=self.words.device),
            self.lengths.to(self.words.device),
        )

    @classmethod
    def from_ids(
        cls, documents: Sequence[Sequence[int]], device: torch.device | str = "cpu"
    ) -> Batch:
        """A batch from lists of word ids (empty documents are kept, with no tokens)."""
        lengths = torch.tensor([len(d) for d in documents], dtype=torch.int64)
        offsets = torch.zeros(len(documents) + 1, dtype=torch.int64)
        torch.cumsum(lengths, 0, out=offsets[1:])
        flat = [w for d in documents for w in d]
        words = torch.tensor(flat, dtype=torch.int64, device=device)
        return cls(words=words, offsets=offsets)
