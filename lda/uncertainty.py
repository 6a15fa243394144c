"""Posterior spread of topic-word weights over the chain's recent samples (docs/heldout.md).

SG-MCMC draws samples of beta; a window of the last S of them (float32, on the model's device)
gives, for any word of a topic, quantiles of its weight: a wide 5-95% interval is a word the
data has not pinned down yet. No VB peer has this.
"""

from __future__ import annotations

import torch

LOW, HIGH = 0.05, 0.95


class SampleWindow:
    """The last ``size`` samples of a K x W matrix (a ring; S x K x W float32 in memory)."""

    def __init__(self, size: int) -> None:
        if size < 2:
            raise ValueError(f"a window needs at least 2 samples, got {size}")
        self.size = size
        self.samples: torch.Tensor | None = None
        self.count = 0  # samples added so far

    def add(self, beta: torch.Tensor) -> None:
        """Keep a copy of ``beta`` (K x W), dropping the oldest once ``size`` are kept."""
        if self.samples is None or self.samples.shape[1:] != beta.shape:
            self.samples = torch.empty(
                (self.size, *beta.shape), dtype=torch.float32, device=beta.device
            )
            self.count = 0
        self.samples[self.count % self.size].copy_(beta.detach())
        self.count += 1

    @property
    def kept(self) -> int:
        return min(self.count, self.size)

    def intervals(
        self, word_ids: torch.Tensor, low: float = LOW, high: float = HIGH
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(low, high) quantiles (K x N each) of beta[k, word_ids[k, i]] over the kept
        samples (linear interpolation, as torch.quantile); None before two samples."""
        if self.samples is None or self.kept < 2:
            return None
        kept, n_words = self.samples[: self.kept], self.samples.shape[2]
        rows = torch.arange(word_ids.shape[0], device=kept.device)[:, None]
        columns = (rows * n_words + word_ids.to(kept.device)).reshape(-1)
        # (K N, S) contiguous: sorting along a strided first dimension was ~50x slower.
        weights = kept.reshape(kept.shape[0], -1).index_select(1, columns).T.to(torch.float64)
        ordered = weights.sort(dim=1).values
        low_q, high_q = (_quantile(ordered, q) for q in (low, high))
        shape = word_ids.shape
        return low_q.reshape(shape).cpu(), high_q.reshape(shape).cpu()


def _quantile(ordered: torch.Tensor, q: float) -> torch.Tensor:
    """The q-quantile of each row of ``ordered`` (sorted), interpolated as torch.quantile's
    default (linear): position q (S - 1) between the order statistics."""
    position = q * (ordered.shape[1] - 1)
    below = int(position)
    above = min(below + 1, ordered.shape[1] - 1)
    share = position - below
    return ordered[:, below] * (1.0 - share) + ordered[:, above] * share
