"""D(z) and Q(z) of the four samplers for the expanded-mean LDA (docs/samplers.md).

z is theta flattened (Langevin samplers) or theta then the momentum r (HMC samplers).
G(theta) = diag(theta)^-1 is the Fisher metric of the expanded-mean parameterisation.
These define the samplers; the closed forms in :mod:`lda.sgmcmc.samplers` are tested against the
generic recipe run with them.
"""

from __future__ import annotations

import torch

from lda.sgmcmc.recipe import MatrixField


def _split(z: torch.Tensor) -> tuple[torch.Tensor, int]:
    half = z.numel() // 2
    return z[:half], half


def sgld(dim: int) -> tuple[MatrixField, MatrixField]:
    """D = I, Q = 0."""
    return (lambda z: torch.eye(dim, dtype=z.dtype)), (
        lambda z: torch.zeros(dim, dim, dtype=z.dtype)
    )


def sghmc(dim: int, friction: float) -> tuple[MatrixField, MatrixField]:
    """D = [[0, 0], [0, C]], Q = [[0, -I], [I, 0]] on z = (theta, r), each of size dim."""

    def D(z: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(2 * dim, 2 * dim, dtype=z.dtype)
        out[dim:, dim:] = friction * torch.eye(dim, dtype=z.dtype)
        return out

    def Q(z: torch.Tensor) -> torch.Tensor:
        eye = torch.eye(dim, dtype=z.dtype)
        zero = torch.zeros(dim, dim, dtype=z.dtype)
        return torch.cat([torch.cat([zero, -eye], 1), torch.cat([eye, zero], 1)], 0)

    return D, Q


def sgrld(dim: int) -> tuple[MatrixField, MatrixField]:
    """D = G^-1 = diag(theta), Q = 0."""
    return (lambda z: torch.diag(z)), (lambda z: torch.zeros(dim, dim, dtype=z.dtype))


def sgrhmc(dim: int, friction: float = 1.0) -> tuple[MatrixField, MatrixField]:
    """D = [[0, 0], [0, C G^-1]], Q = [[0, -G^-1/2], [G^-1/2, 0]] on z = (theta, r).

    The paper's SGRHMC is C = 1. Any C > 0 keeps D positive semi-definite and leaves Gamma
    unchanged (D's momentum block does not depend on r), so it targets the same posterior;
    a larger C damps the momentum noise that stochastic gradients add (Chen et al. 2014)."""

    def D(z: torch.Tensor) -> torch.Tensor:
        theta, _ = _split(z)
        zero = torch.zeros(dim, dim, dtype=z.dtype)
        block = friction * torch.diag(theta)
        return torch.cat([torch.cat([zero, zero], 1), torch.cat([zero, block], 1)], 0)

    def Q(z: torch.Tensor) -> torch.Tensor:
        theta, _ = _split(z)
        root = torch.diag(theta.sqrt())
        zero = torch.zeros(dim, dim, dtype=z.dtype)
        return torch.cat([torch.cat([zero, -root], 1), torch.cat([root, zero], 1)], 0)

    return D, Q
