"""The stochastic gradient of the log posterior of expanded-mean LDA (docs/model.md, Eq. S.18)."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class MinibatchStatistics:
    """What a minibatch tells the sampler: sum_d E[n_dkw] and the scale N/n."""

    topic_word: torch.Tensor  # (K, W)
    scale: float  # N / n

    @property
    def topic_totals(self) -> torch.Tensor:
        """(K, 1) sum over words and documents of E[n_dkw]."""
        return self.topic_word.sum(dim=1, keepdim=True)


def safe(theta: torch.Tensor) -> torch.Tensor:
    """theta with exact zeros raised to the smallest normal number, for 1/theta terms only."""
    return theta.clamp_min(torch.finfo(theta.dtype).tiny)


def log_posterior_gradient(
    theta: torch.Tensor, stats: MinibatchStatistics, alpha: float | torch.Tensor
) -> torch.Tensor:
    """g = (alpha - 1)/theta - 1 + (N/n) (E[n_kw]/theta - E[n_k.]/theta_k.); ``alpha`` a
    scalar or each coordinate's alpha_kw."""
    t = safe(theta)
    row = t.sum(dim=1, keepdim=True)
    return (alpha - 1.0) / t - 1.0 + stats.scale * (stats.topic_word / t - stats.topic_totals / row)
