"""Host side of the exact sparse collapsed Gibbs kernel (:mod:`lda.gibbs.sparse_kernel`).

Gathers the minibatch's distinct words' columns of beta (K x W_b, never the whole K x W) and
their running sums once per call, runs the kernel and hands back the kept-sweep sums by
document (n x K) and by distinct word (W_b x K) with the word ids: no (T, K) array.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import torch

from lda.gamma import Gamma, gamma_vector, symmetric_value
from lda.gibbs.dense import balanced_schedule, draw_by_word_unnormalised
from lda.gibbs.sparse_kernel import gather_columns as gather_kernel
from lda.gibbs.sparse_kernel import (
    reduce_by_word,
    running_sums,
    scatter_columns,
    sparse_gibbs,
    thread_slots,
)


def by_topic_from(n_topics: int) -> int:
    """Topics in use from which a token's conditional is computed over all K in topic order
    (drawn by block sums) rather than by walking the document's list (same law): K/8, which
    beat lists only and K/2 at large K and tied with them at small K (docs/defaults.md, "The
    sparse kernel's thresholds")."""
    return max(1, n_topics // 8)


@dataclass(frozen=True)
class Columns:
    """The minibatch's words as the sparse kernel reads them (all on the CPU)."""

    word_ids: torch.Tensor  # (W_b,) int64 distinct word ids, ascending
    local: torch.Tensor  # (T,) int64 each token's index into word_ids
    beta_t: torch.Tensor  # (W_b, K) float64 beta's columns of those words, transposed
    cdf: torch.Tensor  # (W_b, K) float64 running sums of beta_t's rows over k


def gather_columns(beta: torch.Tensor, words: torch.Tensor) -> Columns:
    """beta's columns of the distinct ``words`` and their prefix sums (the dense part's sampler,
    built once per distinct word)."""
    # numpy's sort-based unique: torch.unique is far slower on a minibatch's words.
    ids_np, local_np = np.unique(words.cpu().numpy(), return_inverse=True)
    ids_np = ids_np.astype(np.int64)
    source = beta.detach()
    if source.device.type != "cpu" or source.dtype not in (torch.float32, torch.float64):
        # Gather on beta's device, move K x W_b only.
        source = source[:, torch.from_numpy(ids_np).to(source.device)]
        source = source.to("cpu", torch.float64)
        columns = np.arange(ids_np.shape[0], dtype=np.int64)
    else:
        columns = ids_np  # read in place, whatever the strides (no K x W copy)
    n_topics = beta.shape[0]
    every = ids_np.shape[0] == source.shape[1]  # ids are then 0..W_b-1: no gather to do
    if every and source.dtype == torch.float64 and source.T.is_contiguous():
        # beta already word-major (the lazy SCIR chain hands its columns so): read in place.
        beta_t = source.T.numpy()
        cdf = np.empty_like(beta_t)
        running_sums(beta_t, cdf)
    else:
        beta_t = np.empty((ids_np.shape[0], n_topics), dtype=np.float64)
        cdf = np.empty_like(beta_t)
        if beta_t.size:
            gather_kernel(source.numpy(), columns, beta_t, cdf)
    local = torch.from_numpy(local_np.reshape(-1).astype(np.int64))
    return Columns(torch.from_numpy(ids_np), local, torch.from_numpy(beta_t), torch.from_numpy(cdf))


def topics_from_columns(columns: Columns, uniforms: torch.Tensor) -> torch.Tensor:
    """One topic per token from p(k | w) ∝ beta_kw, as :func:`lda.gibbs.start.topics_from_beta`
    draws it with the same uniforms (float64), from the gathered columns only."""
    z = np.empty(columns.local.numel(), dtype=np.int64)
    u = uniforms.to("cpu", torch.float64).numpy()
    draw_by_word_unnormalised(columns.local.numpy(), columns.cdf.numpy(), u, z)
    return torch.from_numpy(z)


def dense_part(
    beta_t: np.ndarray, cdf: np.ndarray, gamma: Gamma, vector: np.ndarray
) -> tuple[np.ndarray, float]:
    """The dense part gamma_k beta_kw as the kernel draws it: beta's running sums times the
    scalar when gamma is symmetric (the exact old arithmetic), else the running sums of
    gamma_k beta_kw themselves, times 1."""
    value = symmetric_value(gamma)
    if value is not None:
        return cdf, value
    return np.cumsum(beta_t * vector[None, :], axis=1), 1.0


def sparse_collapsed_gibbs(
    columns: Columns,
    offsets: torch.Tensor,
    gamma: Gamma,
    z: torch.Tensor,
    uniforms: torch.Tensor,
    burn_in: int,
    rao_blackwell: bool,
    word_sums: bool = True,
    document_sums: bool = True,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Every sweep of every document; returns the kept sweeps' float64 sums (not yet divided by
    the kept sweeps): by distinct word ((W_b, K), or None without ``word_sums``) and by
    document ((n, K), or None without ``document_sums``). ``z`` (T,) is the start (not
    modified), ``uniforms`` (sweeps, T)."""
    n_local, n_topics = columns.beta_t.shape
    offsets_np = offsets.to("cpu", torch.int64).numpy()
    n_docs = offsets_np.shape[0] - 1
    local = columns.local.numpy()
    schedule, bounds = balanced_schedule(np.diff(offsets_np), numba.get_num_threads())
    if word_sums:
        slot, slot_start = thread_slots(local, offsets_np, schedule, bounds, n_local)
    else:
        slot = np.full((bounds.shape[0] - 1, n_local), -1, dtype=np.int64)
        slot_start = np.zeros(bounds.shape[0], dtype=np.int64)
    rows = int(slot_start[-1])
    acc = np.zeros((rows, n_topics), dtype=np.float64)
    inv = np.zeros(rows, dtype=np.float64)
    document_topic = np.zeros((n_docs if document_sums else 0, n_topics), dtype=np.float64)
    beta_t = columns.beta_t.numpy()
    vector = gamma_vector(gamma, n_topics)
    dense_cdf, dense_scale = dense_part(beta_t, columns.cdf.numpy(), gamma, vector)
    sparse_gibbs(
        local, offsets_np, schedule, bounds, beta_t, dense_cdf, dense_scale, vector,
        z.to("cpu", torch.int64).numpy().copy(), uniforms.to("cpu").numpy(), burn_in,
        rao_blackwell, by_topic_from(n_topics), slot, slot_start, acc, inv, document_topic,
    )  # fmt: skip
    topic_word = None
    if word_sums:
        by_word = np.zeros((n_local, n_topics), dtype=np.float64)
        reduce_by_word(slot, slot_start, acc, inv, beta_t, vector, rao_blackwell, by_word)
        topic_word = torch.from_numpy(by_word)
    return topic_word, torch.from_numpy(document_topic) if document_sums else None


def scatter_topic_word(
    word_ids: torch.Tensor,
    sums: torch.Tensor,
    scale: float,
    n_words: int,
    dtype: torch.dtype,
) -> torch.Tensor:
    """(K, n_words) zeros but for the columns ``word_ids``, which get ``sums`` (K, W_b) times
    ``scale``: the dense K x W form the learner's step takes today."""
    if word_ids.numel() and int(word_ids[-1]) >= n_words:
        raise ValueError(f"word {int(word_ids[-1])} is outside {n_words} words")
    n_topics = sums.shape[0]
    device = sums.device
    if device.type != "cpu" or dtype not in (torch.float32, torch.float64):
        out = torch.zeros(n_topics, n_words, dtype=dtype, device=device)
        return out.index_copy_(1, word_ids.to(device), (sums * scale).to(dtype))
    out = torch.zeros(n_topics, n_words, dtype=dtype)
    sums_t = sums.T.contiguous()  # (W_b, K): a view's transpose when it came from the kernel
    if word_ids.numel():
        scatter_columns(sums_t.numpy(), word_ids.numpy(), float(scale), out.numpy())
    return out
