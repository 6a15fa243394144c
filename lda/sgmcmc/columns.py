"""A change of vocabulary as the chains apply it: which old column each new word takes.

A :class:`ColumnMap` says, for every word of the new vocabulary, the old column it keeps or
that it enters afresh. Kept columns are carried as they are; entering ones start from the law
of a column that no data has touched, Gamma(alpha, 1) (docs/model.md, "When the vocabulary
changes"); leaving ones are dropped. The chains (lda.sgmcmc.chain, lda.sgmcmc.scir) apply it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from lda.draws import standard_gamma
from lda.sgmcmc.averaging import ExponentialMean


@dataclass(frozen=True)
class ColumnMap:
    """``keep[j]``: the old column of new word j, or -1 for a word that enters."""

    keep: torch.Tensor  # (W',) int64, CPU
    n_old: int

    @classmethod
    def of(cls, keep: torch.Tensor, n_old: int) -> ColumnMap:
        """A checked map: entries in [-1, n_old), no old column kept twice."""
        keep = torch.as_tensor(keep).to(device="cpu", dtype=torch.int64).reshape(-1)
        if keep.numel() == 0:
            raise ValueError("the new vocabulary is empty")
        if bool((keep < -1).any()) or bool((keep >= n_old).any()):
            raise ValueError(f"keep's entries must be -1 or an old column in [0, {n_old})")
        kept = keep[keep >= 0]
        if torch.unique(kept).numel() != kept.numel():
            raise ValueError("an old column is kept for two new words")
        return cls(keep, n_old)

    @property
    def n_new(self) -> int:
        return int(self.keep.numel())

    @cached_property
    def kept(self) -> torch.Tensor:
        """(m,) the new columns that keep an old one."""
        return torch.nonzero(self.keep >= 0).squeeze(1)

    @cached_property
    def sources(self) -> torch.Tensor:
        """(m,) the old columns they keep, in the order of :attr:`kept`."""
        return self.keep[self.keep >= 0]

    @cached_property
    def entering(self) -> torch.Tensor:
        """(e,) the new columns that start afresh."""
        return torch.nonzero(self.keep < 0).squeeze(1)

    @property
    def reorders_only(self) -> bool:
        """No word enters or leaves: the same columns, perhaps in another order."""
        return self.n_new == self.n_old and bool((self.keep >= 0).all())

    def apply(self, matrix: torch.Tensor, fresh: torch.Tensor | None) -> torch.Tensor:
        """(K, W') from (K, W): kept columns copied, entering ones ``fresh`` ((K, e), in the
        order of :attr:`entering`; None only when none enters). A word-major matrix (a view of
        (W, K) storage, the lazy chain's) stays word-major, its columns moved as whole rows of
        the storage: gathering them column by column through the view is far slower."""
        if matrix.T.is_contiguous() and not matrix.is_contiguous():
            return self._apply_rows(matrix.T, None if fresh is None else fresh.T).T
        out = matrix.new_empty(matrix.shape[0], self.n_new)
        out[:, self.kept.to(matrix.device)] = matrix[:, self.sources.to(matrix.device)]
        entering = self.entering
        if entering.numel():
            assert fresh is not None and fresh.shape == (matrix.shape[0], entering.numel())
            out[:, entering.to(matrix.device)] = fresh.to(matrix.device, matrix.dtype)
        return out

    def _apply_rows(self, rows: torch.Tensor, fresh: torch.Tensor | None) -> torch.Tensor:
        """(W', K) from (W, K) rows (and ``fresh`` (e, K)): the map on the first axis."""
        device = rows.device
        out = rows.new_empty(self.n_new, rows.shape[1])
        out.index_copy_(0, self.kept.to(device), rows.index_select(0, self.sources.to(device)))
        entering = self.entering
        if entering.numel():
            assert fresh is not None and fresh.shape == (entering.numel(), rows.shape[1])
            out.index_copy_(0, entering.to(device), fresh.to(device, rows.dtype))
        return out


def prior_columns(
    alpha: float, n_topics: int, n_columns: int, generator: torch.Generator, dtype: torch.dtype
) -> torch.Tensor:
    """(K, n_columns) theta of columns no data has touched: Gamma(alpha, 1) draws, in float64
    first so that float32 draws have the same law."""
    shape = torch.full((n_topics, n_columns), alpha, dtype=torch.float64, device=generator.device)
    return standard_gamma(shape, generator).to(dtype)


def remap_mean(mean: ExponentialMean, columns: ColumnMap, beta: torch.Tensor) -> None:
    """Carry the exponential mean of beta over to the new columns (in place). Kept columns keep
    their mean; an entering column's mean starts at ``beta``'s (the new sample's, (K, W')) value
    there; when columns leave or enter, the kept columns' share of each row is renormalised to
    what the entering ones leave, so rows still sum to 1 (docs/model.md)."""
    if mean.total is None:
        return
    if columns.reorders_only:
        mean.total = columns.apply(mean.total, None)
        return
    value = mean.value
    kept = value[:, columns.sources.to(value.device)]
    entering = beta[:, columns.entering.to(beta.device)].to(value.dtype)
    share = 1.0 - entering.sum(dim=1, keepdim=True)  # what the kept words hold in the sample
    kept = kept * (share / kept.sum(dim=1, keepdim=True))
    out = value.new_empty(value.shape[0], columns.n_new)
    out[:, columns.kept.to(value.device)] = kept
    out[:, columns.entering.to(value.device)] = entering
    mean.total = out * mean.weight
