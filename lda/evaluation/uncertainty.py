"""Posterior spread of topic-word weights over the chain's recent samples (docs/heldout.md).

SG-MCMC draws samples of beta; a window of the last S of them gives, for any word of a topic,
quantiles of its weight: a wide 5-95% interval is a word the data has not pinned down yet. No
VB peer has this. A small model's samples are kept whole (S x K x W float32); a large one's at
M words per topic (the caller's choice, e.g. the served top words): S x K x M values and their
word ids.
"""

from __future__ import annotations

import torch

LOW, HIGH = 0.05, 0.95


class SampleWindow:
    """The last ``size`` samples of a K x W matrix, whole or at M chosen words per row (a
    ring)."""

    def __init__(self, size: int) -> None:
        if size < 2:
            raise ValueError(f"a window needs at least 2 samples, got {size}")
        self.size = size
        self.values: torch.Tensor | None = None  # (S, K, M) float32
        self.word_ids: torch.Tensor | None = None  # (S, K, M) int64
        self.count = 0  # samples added so far

    def add(self, word_ids: torch.Tensor | None, values: torch.Tensor) -> None:
        """Keep a sample's ``values`` (K x M) at ``word_ids`` (K x M; None: ``values`` is the
        whole K x W sample), dropping the oldest once ``size`` are kept. A change of shape or
        of kind (whole rows or chosen words) starts the window over."""
        if word_ids is not None and (word_ids.shape != values.shape or word_ids.dim() != 2):
            raise ValueError(f"word ids {tuple(word_ids.shape)} and values {tuple(values.shape)}")
        whole = word_ids is None
        if (
            self.values is None
            or self.values.shape[1:] != values.shape
            or whole != (self.word_ids is None)
        ):
            self.values = torch.empty((self.size, *values.shape), dtype=torch.float32)
            self.word_ids = (
                None if whole else torch.empty((self.size, *values.shape), dtype=torch.int64)
            )
            self.count = 0
        slot = self.count % self.size
        self.values[slot].copy_(values.detach())
        if self.word_ids is not None and word_ids is not None:
            self.word_ids[slot].copy_(word_ids.detach())
        self.count += 1

    @property
    def kept(self) -> int:
        return min(self.count, self.size)

    def intervals(
        self, word_ids: torch.Tensor, low: float = LOW, high: float = HIGH
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(low, high) quantiles (K x N each, float64) of beta[k, word_ids[k, i]] over the kept
        samples that hold that word (linear interpolation, as torch.quantile); NaN where fewer
        than two do; None before two samples."""
        if self.values is None or self.kept < 2:
            return None
        values = self.values[: self.kept]
        wanted = word_ids.to(torch.int64).cpu()
        if self.word_ids is None:  # whole rows: every word is in every sample
            found = values.gather(2, wanted[None].expand(self.kept, -1, -1)).to(torch.float64)
            held = torch.ones(found.shape, dtype=torch.bool)
        else:
            held, at = _positions(self.word_ids[: self.kept], wanted)
            found = values.gather(2, at).to(torch.float64)  # (S, K, N)
        found = torch.where(held, found, torch.tensor(float("nan"), dtype=torch.float64))
        # (K, N, S) contiguous: quantiles along a strided first dimension were far slower.
        found = found.permute(1, 2, 0).contiguous()
        too_few = held.sum(dim=0) < 2
        bounds = []
        for q in (low, high):
            bound = torch.nanquantile(found, q, dim=2) if found.numel() else found.sum(dim=2)
            bounds.append(bound.masked_fill(too_few, float("nan")))
        return bounds[0], bounds[1]


def _positions(ids: torch.Tensor, wanted: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(held, at), each (S, K, N): whether sample s holds word wanted[k, i] among its words
    ids[s, k] (S, K, M), and at which position (the first; 0 if not held). A binary search in
    each sample's sorted words: comparing every pair formed S x K x N x M arrays, the largest
    allocation of a snapshot at K = 1,000."""
    order = torch.argsort(ids, dim=2, stable=True)
    ordered = ids.gather(2, order)
    asked = wanted[None].expand(ids.shape[0], -1, -1).contiguous()
    slot = torch.searchsorted(ordered, asked).clamp_(max=ids.shape[2] - 1)
    return ordered.gather(2, slot) == asked, order.gather(2, slot)
