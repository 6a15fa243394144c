"""Gamma and Dirichlet draws from an explicit generator.

torch's public distributions draw from the global generator only, and the learner's draws must
come from its own generators (a resumed run equals an uninterrupted one: lda.model). So these
call the kernels those distributions use, private to torch, here and nowhere else.
"""

from __future__ import annotations

import torch


def standard_gamma(shape: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Gamma(shape, 1) draws, one per entry of ``shape``."""
    return torch._standard_gamma(shape, generator=generator)


def sample_dirichlet(
    concentration: torch.Tensor, generator: torch.Generator | None
) -> torch.Tensor:
    """One Dirichlet draw per row of ``concentration``."""
    return torch._sample_dirichlet(concentration, generator=generator)
