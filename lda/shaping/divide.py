"""A topic divided in two, the reverse of a merge's sum: the split the topic shaper makes
(docs/model.md, "Divide: a split that keeps the topic's history")."""

from __future__ import annotations

import torch

from lda.model import StreamingLDA
from lda.shaping.moves import check_topic, check_unseeded


def divide(
    model: StreamingLDA,
    k: int,
    fraction: torch.Tensor,
    free_slot: int,
    generator: torch.Generator,
) -> None:
    """Topic ``k`` divided in two, the reverse of a merge: row k keeps ``fraction`` ((W,) in
    [0, 1]) of each theta_kw, the free slot takes the rest, so the two rows add up to the row
    before; their averages are divided alike and gamma_k is shared in proportion to the two
    rows' sums. A seeded ``k`` keeps its seeds; the free slot must be unseeded."""
    check_topic(model, k)
    check_topic(model, free_slot)
    if k == free_slot:
        raise ValueError(f"the free slot must differ from topic {k}")
    check_unseeded(model, free_slot, "born into")
    f = torch.as_tensor(fraction, dtype=torch.float64).reshape(-1).cpu()
    if f.numel() != model.config.n_words or not bool(((f >= 0) & (f <= 1)).all()):
        raise ValueError("fraction must hold one value in [0, 1] per word")
    model.chain.divide_row(k, free_slot, f, generator)
    sums = model.chain.theta[[k, free_slot]].to(torch.float64).sum(dim=1)
    gamma = model.prior.gamma.clone()
    if model.prior.learn:
        pair = float(gamma[k])
        share = float(sums[0] / sums.sum())
        floor = model.prior.schedule.floor
        gamma[k] = max(pair * share, floor)
        gamma[free_slot] = max(pair * (1.0 - share), floor)
    else:
        gamma[free_slot] = gamma[k]
    model.prior.gamma = gamma
