"""The posterior mean of beta over recent samples: an exponential moving average of the chain.

One sample of an SG-MCMC chain is noisy; the mean of the last ~1/(1 - decay) samples estimates
E[beta | data] far better (docs/defaults.md, "beta_mean and its decay"). The weights are
normalised (as Adam's bias correction), so the first samples are not pulled towards zero, and
decay 0 is the last sample exactly.
"""

from __future__ import annotations

from typing import Any

import torch


class ExponentialMean:
    """sum_s decay^(t-s) x_s / sum_s decay^(t-s) over the samples x_1..x_t added so far."""

    def __init__(self, decay: float) -> None:
        if not 0.0 <= decay < 1.0:
            raise ValueError(f"decay must be in [0, 1), got {decay}")
        self.decay = decay
        self.total: torch.Tensor | None = None
        self.weight = 0.0  # sum of the weights, 1 - decay^t
        self.count = 0

    def add(self, x: torch.Tensor) -> None:
        """Fold in one sample (its dtype and device are kept)."""
        if self.total is None:
            self.total = x.detach() * (1.0 - self.decay)
            self.weight = 1.0 - self.decay
        else:
            self.total.mul_(self.decay).add_(x.detach(), alpha=1.0 - self.decay)
            self.weight = self.decay * self.weight + (1.0 - self.decay)
        self.count += 1

    @property
    def value(self) -> torch.Tensor:
        """The weighted mean; an error before any sample."""
        if self.total is None:
            raise ValueError("no sample has been added yet")
        return self.total / self.weight

    def state_dict(self) -> dict[str, Any]:
        return {
            "decay": self.decay,
            "total": self.total,
            "weight": self.weight,
            "count": self.count,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if float(state["decay"]) != self.decay:
            raise ValueError(f"state has decay {state['decay']}, this mean {self.decay}")
        self.total = state["total"]
        self.weight = float(state["weight"])
        self.count = int(state["count"])
