"""Seed words: a prior per topic and word, alpha_kw = alpha + s_kw at a few coordinates.

A seed word w of topic k raises theta_kw's prior from Gamma(alpha, 1) to Gamma(alpha + s, 1):
s pseudo-counts of w in k that no minibatch brings (docs/model.md, "Seeded topics"). Most
coordinates carry none, so the prior is kept sparse, as (topic, word, s) triples.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class SeedPrior:
    """The coordinates (topics[i], words[i]) whose prior carries strength[i] more than alpha."""

    topics: torch.Tensor  # (S,) int64
    words: torch.Tensor  # (S,) int64
    strength: torch.Tensor  # (S,) float64, each > 0

    @classmethod
    def of(cls, triples: Iterable[tuple[int, int, float]]) -> SeedPrior:
        """From (topic, word, s) triples; a coordinate named twice keeps its last s."""
        last = {(int(k), int(w)): float(s) for k, w, s in triples}
        if any(not s > 0 for s in last.values()):
            raise ValueError("a seed's strength must be positive")
        keys = sorted(last)
        return cls(
            torch.tensor([k for k, _ in keys], dtype=torch.int64),
            torch.tensor([w for _, w in keys], dtype=torch.int64),
            torch.tensor([last[key] for key in keys], dtype=torch.float64),
        )

    @classmethod
    def none(cls) -> SeedPrior:
        return cls.of([])

    def __len__(self) -> int:
        return int(self.words.numel())

    def triples(self) -> list[tuple[int, int, float]]:
        return list(
            zip(self.topics.tolist(), self.words.tolist(), self.strength.tolist(), strict=True)
        )

    def columns(self) -> torch.Tensor:
        """The seeded words, sorted, each once."""
        return torch.unique(self.words)

    def excess(
        self, shape: tuple[int, int], dtype: torch.dtype, device: torch.device | str = "cpu"
    ) -> torch.Tensor:
        """(K, W) s_kw: zero but at the seeded coordinates."""
        out = torch.zeros(shape, dtype=dtype, device=device)
        out[self.topics.to(device), self.words.to(device)] = self.strength.to(device, dtype)
        return out

    def at_columns(self, columns: torch.Tensor, n_topics: int, dtype: torch.dtype) -> torch.Tensor:
        """(K, len(columns)) s_kw at the sorted ``columns``, which hold every seeded word."""
        out = torch.zeros((n_topics, int(columns.numel())), dtype=dtype)
        out[self.topics, torch.searchsorted(columns, self.words)] = self.strength.to(dtype)
        return out

    def remap(self, keep: torch.Tensor, n_old: int) -> SeedPrior:
        """The prior over a new vocabulary, ``keep[j]`` new word j's old column or -1 (as
        lda.remap.remap_indices makes it): a seeded word that left takes its seeds with it."""
        old_to_new = torch.full((n_old,), -1, dtype=torch.int64)
        kept_new = torch.nonzero(keep >= 0).squeeze(1)
        old_to_new[keep[kept_new]] = kept_new
        moved = old_to_new[self.words]
        kept = moved >= 0
        return SeedPrior(self.topics[kept], moved[kept], self.strength[kept])

    def state_dict(self) -> dict[str, Any]:
        return {"topics": self.topics, "words": self.words, "strength": self.strength}

    @classmethod
    def from_state_dict(cls, state: dict[str, Any] | None) -> SeedPrior:
        """A checkpoint's prior (None: one written before seeds, with none)."""
        if state is None:
            return cls.none()
        return cls(
            state["topics"].to(torch.int64),
            state["words"].to(torch.int64),
            state["strength"].to(torch.float64),
        )


def pseudo_counts(
    strength: float, corpus_size: float, tokens_per_document: float, n_topics: int
) -> float:
    """A seed's s from a dimensionless ``strength``: that percent of the tokens an average topic
    gathers over the N documents the chain stands for, s = strength N L / (100 K), so that the
    same strength holds a topic whatever N, L (tokens per document) and K (docs/model.md)."""
    if not strength > 0:
        raise ValueError("a seed's strength must be positive")
    if not (corpus_size > 0 and tokens_per_document > 0 and n_topics > 0):
        raise ValueError("corpus size, tokens per document and topics must be positive")
    return strength * corpus_size * tokens_per_document / (100.0 * n_topics)
