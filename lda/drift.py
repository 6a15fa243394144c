"""How far topics moved between two estimates of beta (docs/heldout.md).

Topics of two samples are matched first, a label may move: the assignment of the current
topics to the previous ones that minimises the summed Hellinger distance (one K x K matrix
product and the Hungarian algorithm), then each pair's Jensen-Shannon divergence, in bits
(0: the same distribution, 1: disjoint supports).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from scipy.optimize import linear_sum_assignment

CHANGED_BITS = 0.05  # a topic whose divergence exceeds this since the last evaluation changed


@dataclass(frozen=True)
class Drift:
    """Per current topic k: ``matched[k]``, its previous topic, and ``divergence[k]``, the JS
    divergence (bits) between the two."""

    matched: torch.Tensor  # (K,) int64
    divergence: torch.Tensor  # (K,) float64


def js_divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Row-wise Jensen-Shannon divergence in bits of distributions ``p`` and ``q`` (K x W)."""
    p, q = p.to(torch.float64), q.to(torch.float64)
    m = 0.5 * (p + q)

    def kl(a: torch.Tensor) -> torch.Tensor:
        ratio = torch.where(a > 0, a / m.clamp_min(torch.finfo(m.dtype).tiny), 1.0)
        return (a * torch.log2(ratio)).sum(dim=1)

    return (0.5 * kl(p) + 0.5 * kl(q)).clamp_(0.0, 1.0)


def match_topics(previous: torch.Tensor, current: torch.Tensor) -> torch.Tensor:
    """(K,) for each current topic the previous topic it is matched to (a permutation)."""
    affinity = previous.to(torch.float64).sqrt() @ current.to(torch.float64).sqrt().T
    hellinger = (1.0 - affinity.clamp(max=1.0)).clamp_min(0.0).sqrt()  # previous x current
    rows, cols = linear_sum_assignment(hellinger.cpu().numpy())
    matched = torch.empty(current.shape[0], dtype=torch.int64)
    matched[torch.from_numpy(cols)] = torch.from_numpy(rows)
    return matched


def topic_drift(previous: torch.Tensor, current: torch.Tensor) -> Drift:
    """Each current topic's matched previous topic and how far it moved (rows sum to 1)."""
    matched = match_topics(previous, current)
    divergence = js_divergence(previous[matched.to(previous.device)], current).cpu()
    return Drift(matched=matched, divergence=divergence)
