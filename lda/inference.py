"""Topic proportions of a new document under a fixed beta (``POST /infer`` folds texts in).

A fixed-point (EM) iteration for pi with beta held fixed, using the same estimator form as
held-out perplexity (docs/heldout.md): responsibilities r_jk ∝ pi_k beta[k, x_j], then
pi_k = (sum_j r_jk + gamma_k) / (n + gamma_0) (gamma: a scalar or one value per topic). Words
are counted once per distinct id, so the cost is K × (distinct words) per iteration whatever the
text's length.
"""

from __future__ import annotations

import torch

from lda.gamma import Gamma, gamma_total, gamma_vector, symmetric_value


def infer_topics(
    beta: torch.Tensor,
    word_ids: torch.Tensor,
    gamma: Gamma,
    *,
    iterations: int = 100,
    tolerance: float = 1e-6,
) -> list[float]:
    """pi (length K, sums to 1) of a document given as word ids; for no words the prior's
    mean gamma_k / gamma_0 (uniform when gamma is symmetric)."""
    k = int(beta.shape[0])
    pi = torch.full((k,), 1.0 / k, dtype=torch.float64)
    if word_ids.numel() == 0:
        if symmetric_value(gamma) is None:
            return (gamma_vector(gamma, k) / gamma_total(gamma, k)).tolist()
        return pi.tolist()
    ids, counts = torch.unique(word_ids.long(), return_counts=True)
    b = beta[:, ids].to(torch.float64)
    column = b.sum(0)
    known = column > 0  # a word no topic can emit carries no information about pi
    b, weights = b[:, known], counts[known].to(torch.float64)
    n = float(weights.sum())
    value = symmetric_value(gamma)
    prior = value if value is not None else torch.from_numpy(gamma_vector(gamma, k))
    total = gamma_total(gamma, k)
    for _ in range(iterations):
        r = pi[:, None] * b
        r = r / r.sum(0, keepdim=True).clamp_min(torch.finfo(torch.float64).tiny)
        new = ((r * weights).sum(1) + prior) / (n + total)
        moved = float((new - pi).abs().max())
        pi = new
        if moved < tolerance:
            break
    return (pi / pi.sum()).tolist()
