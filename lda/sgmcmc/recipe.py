"""The complete recipe of Ma, Chen & Fox (2015) for any D(z), Q(z): the oracle of the samplers.

    z <- z + eps * ( -(D(z) + Q(z)) grad H(z) + Gamma(z) ) + N(0, 2 eps D(z)),
    Gamma_i(z) = sum_j d/dz_j (D_ij(z) + Q_ij(z)),

with Gamma by automatic differentiation. The sign of Gamma is that of the paper's continuous
dynamics (its Eq. 2); it reproduces every closed form of docs/samplers.md (e.g. SGRLD's +1 per
coordinate). Meant for small problems: it forms d x d matrices and a d x d x d Jacobian.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

MatrixField = Callable[[torch.Tensor], torch.Tensor]
GradientField = Callable[[torch.Tensor], torch.Tensor]


def correction(z: torch.Tensor, D: MatrixField, Q: MatrixField) -> torch.Tensor:
    """Gamma(z): the divergence of each row of D + Q, by automatic differentiation."""
    jacobian = torch.autograd.functional.jacobian(lambda x: D(x) + Q(x), z.detach())
    return torch.einsum("ijj->i", jacobian)


def diffusion_sqrt(matrix: torch.Tensor) -> torch.Tensor:
    """The symmetric square root of a positive semi-definite matrix."""
    values, vectors = torch.linalg.eigh(matrix)
    return (vectors * values.clamp_min(0).sqrt()) @ vectors.T


def recipe_step(
    z: torch.Tensor,
    grad_H: GradientField,
    D: MatrixField,
    Q: MatrixField,
    step_size: float,
    noise: torch.Tensor,
) -> torch.Tensor:
    """One Euler-Maruyama step of the complete recipe; ``noise`` is standard normal like z."""
    z = z.detach()
    d, q = D(z), Q(z)
    drift = -(d + q) @ grad_H(z) + correction(z, D, Q)
    return z + step_size * drift + diffusion_sqrt(2.0 * step_size * d) @ noise


def grad_from_potential(U: Callable[[torch.Tensor], torch.Tensor]) -> GradientField:
    """grad U by automatic differentiation, for potentials given as functions."""

    def grad(z: torch.Tensor) -> torch.Tensor:
        x = z.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(U(x), x)
        return g

    return grad
