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


@dataclass(frozen=True)
class Drift:
    """Per current topic k: ``matched[k]``, its previous topic, and ``divergence[k]``, the JS
    divergence (bits) between the two."""

    matched: torch.Tensor  # (K,) int64
    divergence: torch.Tensor  # (K,) float64


# Rows of topics taken at a time: memory stays O(ROWS x W), never several K x W float64
# temporaries; above FLOAT32_FROM entries the matching's square roots are float32 (it needs the
# affinities' order, not their last digits).
ROWS = 64
FLOAT32_FROM = 10_000_000


def js_divergence(
    p: torch.Tensor, q: torch.Tensor, rows: torch.Tensor | None = None
) -> torch.Tensor:
    """Row-wise Jensen-Shannon divergence in bits of distributions ``p[rows]`` (all rows by
    default) and ``q`` (K x W)."""
    order = torch.arange(p.shape[0]) if rows is None else rows
    parts = [
        _js_rows(p[order[i : i + ROWS].to(p.device)], q[i : i + ROWS])
        for i in range(0, q.shape[0], ROWS)
    ]
    return torch.cat(parts) if parts else torch.zeros(0, dtype=torch.float64)


def _js_rows(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    p, q = p.to(torch.float64), q.to(torch.float64)
    m = 0.5 * (p + q)

    def kl(a: torch.Tensor) -> torch.Tensor:
        ratio = torch.where(a > 0, a / m.clamp_min(torch.finfo(m.dtype).tiny), 1.0)
        return (a * torch.log2(ratio)).sum(dim=1)

    return (0.5 * kl(p) + 0.5 * kl(q)).clamp_(0.0, 1.0)


def match_topics(previous: torch.Tensor, current: torch.Tensor) -> torch.Tensor:
    """(K,) for each current topic the previous topic it is matched to (a permutation)."""
    dtype = torch.float64 if current.numel() < FLOAT32_FROM else torch.float32
    current_root = current.to(dtype).sqrt()
    affinity = torch.cat(
        [
            previous[i : i + ROWS].to(dtype).sqrt() @ current_root.T
            for i in range(0, previous.shape[0], ROWS)
        ]
    ).to(torch.float64)
    hellinger = (1.0 - affinity.clamp(max=1.0)).clamp_min(0.0).sqrt()  # previous x current
    rows, cols = linear_sum_assignment(hellinger.cpu().numpy())
    matched = torch.empty(current.shape[0], dtype=torch.int64)
    matched[torch.from_numpy(cols)] = torch.from_numpy(rows)
    return matched


def topic_drift(previous: torch.Tensor, current: torch.Tensor) -> Drift:
    """Each current topic's matched previous topic and how far it moved (rows sum to 1)."""
    matched = match_topics(previous, current)
    return Drift(matched=matched, divergence=js_divergence(previous, current, matched).cpu())
