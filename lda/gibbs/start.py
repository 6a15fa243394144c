"""The random numbers every backend draws from the caller's generator before it sweeps: the
chain's start and the sweeps' uniforms. Each is drawn for every token of the whole minibatch and
this rank's slice kept (:class:`lda.parallel.Shard`), so every rank of a group draws what one
learner would."""

from __future__ import annotations

import numpy as np
import torch

from lda.gibbs.config import GibbsConfig
from lda.parallel import Shard

# Entries of the (tokens, K) running sums one chunk of a device draw gathers: 128 MB in float64.
DRAW_CHUNK_ENTRIES = 1 << 24


def start_topics(
    beta: torch.Tensor,
    words: torch.Tensor,
    config: GibbsConfig,
    generator: torch.Generator,
    shard: Shard,
    compiled: bool,
) -> torch.Tensor:
    """Each token's first topic: uniform, or (``init="beta"``) from p(k | w) ∝ beta_kw, by the
    compiled draw or torch's (the same topics)."""
    if config.init == "beta":
        return topics_from_beta(beta, words, generator, compiled, shard)
    return uniform_topics(beta.shape[0], generator, shard, words.numel(), beta.device)


def uniform_topics(
    n_topics: int, generator: torch.Generator, shard: Shard, own: int, device: torch.device
) -> torch.Tensor:
    """A uniform start: one topic in [0, n_topics) per token of this rank's ``own``."""
    draws = torch.randint(n_topics, (shard.total,), generator=generator, device=device)
    return shard.take(draws, own)


def start_uniforms(
    generator: torch.Generator, shard: Shard, own: int, device: torch.device
) -> torch.Tensor:
    """(own,) float64 uniforms of a start drawn from beta, one per token."""
    u = torch.rand(shard.total, generator=generator, device=device, dtype=torch.float64)
    return shard.take(u, own)


def sweep_uniforms(
    sweeps: int, generator: torch.Generator, shard: Shard, own: int, device: torch.device
) -> torch.Tensor:
    """(sweeps, own) the uniforms the CPU kernels and the torch reference consume, contiguous."""
    uniforms = torch.rand((sweeps, shard.total), generator=generator, device=device)
    if own != shard.total:
        uniforms = shard.take(uniforms, own).contiguous()
    return uniforms


def topics_from_beta(
    beta: torch.Tensor,
    words: torch.Tensor,
    generator: torch.Generator,
    use_kernel: bool,
    shard: Shard | None = None,
) -> torch.Tensor:
    """One topic per token from p(k | w) ∝ beta_kw (the chain's start for ``init="beta"``)."""
    shard = shard or Shard(0, words.numel())
    u = start_uniforms(generator, shard, words.numel(), beta.device)
    cdf_t = beta.detach().T.to(torch.float64).cumsum(dim=1)  # (W, K)
    cdf_t = cdf_t / cdf_t[:, -1:]
    if use_kernel:
        from lda.gibbs.dense import draw_by_word

        z_np = np.empty(words.numel(), dtype=np.int64)
        draw_by_word(words.cpu().numpy(), cdf_t.cpu().numpy(), u.cpu().numpy(), z_np)
        return torch.from_numpy(z_np).to(beta.device)
    return draw_by_word_torch(cdf_t, words, u)


def draw_by_word_torch(cdf_t: torch.Tensor, words: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """One topic per token from its word's row of running sums ``cdf_t`` (rows need not end at
    1), in torch on any device, a chunk of tokens at a time so that the gathered rows stay
    bounded (a whole large minibatch at large K would gather tokens x K at once)."""
    n_topics = cdf_t.shape[1]
    step = max(1, DRAW_CHUNK_ENTRIES // max(1, n_topics))
    z = torch.empty(words.numel(), dtype=torch.int64, device=cdf_t.device)
    for a in range(0, words.numel(), step):
        rows = cdf_t[words[a : a + step]]
        target = (u[a : a + step] * rows[:, -1]).unsqueeze(1)
        z[a : a + step] = torch.searchsorted(rows, target, right=True).squeeze(1)
    return z.clamp_(max=n_topics - 1)
