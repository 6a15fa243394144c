"""Posterior spread of topic-word weights over the chain's recent samples (issue 13).

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
        kept = self.samples[: self.kept]  # (S, K, W)
        index = word_ids.to(kept.device)[None].expand(kept.shape[0], -1, -1)
        weights = kept.gather(2, index).to(torch.float64)  # (S, K, N)
        q = torch.tensor([low, high], dtype=torch.float64, device=weights.device)
        bounds = torch.quantile(weights, q, dim=0)  # (2, K, N)
        return bounds[0].cpu(), bounds[1].cpu()
