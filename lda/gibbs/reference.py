"""The torch backend: every method in whole-tensor operations, on any device.

The collapsed chain advances all documents together, one token position at a time, consuming
the CPU kernel's uniforms in the kernel's order, so it gives the dense kernel's numbers draw for
draw: the tests' reference, and too many small launches per position to pay on a GPU. The
uncollapsed chain, which runs only here, instantiates pi_d and then draws every token at once.
"""

from __future__ import annotations

import torch

from lda.batch import Batch
from lda.draws import sample_dirichlet
from lda.gamma import gamma_vector, symmetric_value
from lda.gibbs.config import GibbsConfig
from lda.gibbs.result import GibbsExpectations
from lda.gibbs.start import start_topics, sweep_uniforms
from lda.parallel import Shard


def run_reference(
    beta: torch.Tensor,
    batch: Batch,
    config: GibbsConfig,
    generator: torch.Generator,
    shard: Shard,
) -> GibbsExpectations:
    """The torch backend's Gibbs expectations (per-token sums, on beta's device)."""
    uncollapsed = config.method == "uncollapsed"
    if uncollapsed and shard.total != batch.n_tokens:
        raise ValueError("uncollapsed Gibbs draws per document: it cannot be split over ranks")
    words = batch.words.to(beta.device)
    z = start_topics(beta, words, config, generator, shard, compiled=False)
    if uncollapsed:
        summed = _uncollapsed(beta, words, batch, config, z, generator)
    else:
        uniforms = sweep_uniforms(config.sweeps, generator, shard, batch.n_tokens, beta.device)
        summed = _collapsed(beta, words, batch.offsets, config, z, uniforms)
    return GibbsExpectations(
        summed=summed, kept=config.kept, dtype=beta.dtype, batch=Batch(words, batch.offsets)
    )


def prior_of(config: GibbsConfig, n_topics: int, device: torch.device) -> float | torch.Tensor:
    """gamma as a float when symmetric (the old arithmetic), else a (K,) float64 tensor."""
    value = symmetric_value(config.gamma)
    if value is not None:
        return value
    return torch.from_numpy(gamma_vector(config.gamma, n_topics)).to(device)


def _collapsed(
    beta: torch.Tensor,
    words: torch.Tensor,
    offsets: torch.Tensor,
    config: GibbsConfig,
    z: torch.Tensor,
    uniforms: torch.Tensor,
) -> torch.Tensor:
    """All documents advance together, one token position per step."""
    burn_in, rao_blackwell = config.burn_in, config.rao_blackwell
    device = beta.device
    n_topics = beta.shape[0]
    gamma = prior_of(config, n_topics, device)
    lengths = (offsets[1:] - offsets[:-1]).to(device)
    n_docs = int(lengths.numel())
    width = int(lengths.max()) if n_docs else 0
    out = torch.zeros(words.numel(), n_topics, dtype=torch.float64, device=device)
    if width == 0:
        return out
    position = torch.arange(width, device=device)
    mask = position[None, :] < lengths[:, None]  # (n, L)
    flat = (offsets[:-1].to(device)[:, None] + position[None, :]).clamp(
        max=max(words.numel() - 1, 0)
    )
    pad_words = torch.where(mask, words[flat], 0)
    pad_z = torch.where(mask, z[flat], 0)
    beta_t = beta.detach().to(torch.float64).T  # (W, K)
    counts = torch.zeros(n_docs, n_topics, dtype=torch.float64, device=device)
    counts.scatter_add_(1, pad_z, mask.to(torch.float64))
    for s in range(uniforms.shape[0]):
        keep = s >= burn_in
        u_sweep = uniforms[s].to(torch.float64)
        for j in range(width):
            active = mask[:, j]
            weight = active.to(torch.float64)[:, None]
            k_old = pad_z[:, j : j + 1]
            counts.scatter_add_(1, k_old, -weight)
            weights = (gamma + counts) * beta_t[pad_words[:, j]]
            total = weights.sum(dim=1, keepdim=True)
            u = u_sweep[flat[:, j]][:, None] * total
            # The kernel's order: the current topic first, then the others in turn.
            w_old = weights.gather(1, k_old)
            others = torch.cumsum(weights.scatter(1, k_old, 0.0), dim=1)
            k_moved = torch.searchsorted(others, u - w_old, right=True).clamp_(max=n_topics - 1)
            k_new = torch.where(active[:, None] & (u >= w_old), k_moved, k_old)
            counts.scatter_add_(1, k_new, weight)
            pad_z[:, j : j + 1] = k_new
            if keep:
                rows = flat[active, j]
                if rao_blackwell:
                    out[rows] += (weights / total)[active]
                else:
                    out[rows, k_new[active, 0]] += 1.0
    return out


def _uncollapsed(
    beta: torch.Tensor,
    words: torch.Tensor,
    batch: Batch,
    config: GibbsConfig,
    z: torch.Tensor,
    generator: torch.Generator,
) -> torch.Tensor:
    """Blocked Gibbs with pi_d instantiated: pi_d | z ~ Dirichlet(gamma + n_d), then every token
    at once, z_j | pi ~ pi_dk beta_kw. The same target for z as the collapsed chain, slower
    mixing, but each sweep is a handful of whole-minibatch tensor operations (no loop over
    token positions), which is what a GPU needs. Sums the conditionals of z over kept sweeps."""
    n_topics = beta.shape[0]
    n_docs = batch.n_documents
    doc = batch.document_index().to(beta.device)
    rows = beta.detach().T[words]  # (T, K) beta_kw of each token
    fallback = rows / rows.sum(dim=1, keepdim=True).clamp_min(torch.finfo(rows.dtype).tiny)
    out = torch.zeros_like(rows)
    for s in range(config.sweeps):
        counts = torch.bincount(doc * n_topics + z, minlength=n_docs * n_topics)
        counts_dk = counts.view(n_docs, n_topics).to(rows.dtype)
        concentration = prior_of(config, n_topics, beta.device) + counts_dk
        pi = sample_dirichlet(concentration, generator)
        weights = pi[doc] * rows
        total = weights.sum(dim=1, keepdim=True)
        # pi can underflow to 0 on every topic a word has mass in (gamma << 1): beta decides.
        conditional = torch.where(total > 0, weights / total, fallback)
        u = torch.rand(
            (words.numel(), 1), generator=generator, device=beta.device, dtype=rows.dtype
        )
        z = torch.searchsorted(conditional.cumsum(dim=1), u, right=True).clamp_(max=n_topics - 1)
        z = z[:, 0]
        if s >= config.burn_in:
            out += conditional
    return out
