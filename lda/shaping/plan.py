"""A decision's moves as one value (lda.shaping.shaper): what rank 0 decided, shared with every
rank of a data-parallel group so that all make the same moves."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from lda.parallel import Reducer
from lda.shaping.config import KINDS


@dataclass(frozen=True)
class Plan:
    """A decision: the merges (kept, away), the retires, the splits (topic, free slot, the
    fraction f row k keeps), and how many proposals of each kind were scored."""

    merges: tuple[tuple[int, int], ...] = ()
    retires: tuple[int, ...] = ()
    splits: tuple[tuple[int, int, torch.Tensor], ...] = ()
    scored: dict[str, int] = field(default_factory=dict)

    def shared(self, group: Reducer, n_words: int, device: torch.device) -> Plan:
        """Rank 0's plan on every rank of ``group`` (the others pass an empty one): two sums,
        the sizes, then the moves with each split's fraction."""
        head = torch.zeros(3 + len(KINDS), dtype=torch.float64)
        if group.rank == 0:
            head[:3] = torch.tensor([len(self.merges), len(self.retires), len(self.splits)])
            head[3:] = torch.tensor([float(self.scored.get(k, 0)) for k in KINDS])
        head = summed(group, head, device)
        m, r, s = (int(v) for v in head[:3])
        body = torch.zeros(2 * m + r + s * (2 + n_words), dtype=torch.float64)
        if group.rank == 0:
            rows = [float(v) for pair in self.merges for v in pair] + [
                float(k) for k in self.retires
            ]
            rows += [float(v) for k, slot, _ in self.splits for v in (k, slot)]
            parts = [f.to("cpu", torch.float64) for _, _, f in self.splits]
            body = torch.cat([torch.tensor(rows, dtype=torch.float64), *parts])
        body = summed(group, body, device)
        ints = [int(v) for v in body[: 2 * m + r + 2 * s].tolist()]
        fractions = body[2 * m + r + 2 * s :].reshape(s, n_words)
        return Plan(
            merges=tuple(zip(ints[0 : 2 * m : 2], ints[1 : 2 * m : 2], strict=True)),
            retires=tuple(ints[2 * m : 2 * m + r]),
            splits=tuple(
                (ints[2 * m + r + 2 * i], ints[2 * m + r + 2 * i + 1], fractions[i])
                for i in range(s)
            ),
            scored={k: int(v) for k, v in zip(KINDS, head[3:].tolist(), strict=True) if v},
        )


def summed(group: Reducer, tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``tensor`` summed over the group's ranks (on ``device``, the learner's, where its
    collectives run)."""
    out = tensor.to(device)
    group.sum_(out)
    return out.cpu()
