"""The exact sparse collapsed Gibbs sweep (lda.gibbs.sparse_kernel) on a CUDA device (numba).

One thread per document (grid-stride over documents), each with its own slices of global
scratch: the document's counts, its compact list of topics in use and their weights. Per token
the sparse part n_dk^{-j} beta_kw is walked over the list (O(K_d)), the dense part gamma_k beta_kw
by binary search in the word's prefix sums, one uniform choosing; the uniforms are the CUDA
kernel's Philox stream (lda.gibbs.dense_cuda.uniform: counter = global token index, sweep), so
the draws are those of the CPU sparse kernel, walking lists only, fed the same uniforms.
Sums: by document (a thread owns its row) and by distinct word (atomics: documents share words);
the Rao-Blackwellised dense part is one 1/Z per token, multiplied into beta's column at the
document's end. A first version: a document's sweeps are sequential in one thread, so the
device is busy only with many documents. Tested under numba's CUDA simulator only.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from lda.gamma import Gamma, gamma_vector, symmetric_value
from lda.gibbs.dense_cuda import available, cuda, simulated, uniform
from lda.gibbs.sparse import Columns


def _build() -> Any:
    @cuda.jit
    def sparse_gibbs_cuda(
        local,  # (T,) int64 local word ids
        offsets,  # (n+1,) int64
        beta_t,  # (W_b, K) float64
        cdf,  # (W_b, K) float64: running sums of the dense part's weights
        dense_scale,  # float: the dense part's weights are dense_scale x cdf's steps
        gamma,  # (K,) float64 gamma_k
        z,  # (T,) int64 start, updated in place
        key,  # (2,) int64 Philox key
        base,  # int: global index of token 0
        sweeps,  # int
        burn_in,  # int
        rao_blackwell,  # bool
        word_sums,  # bool
        counts,  # (n, K) float64 zeros: scratch
        topics,  # (n, K) int64 scratch: the topics in use
        where,  # (n, K) int64 scratch: a topic's place in topics
        weights,  # (n, K) float64 scratch
        inv_z,  # (T,) float64 zeros: a token's kept sum of 1/Z
        word_topic,  # (W_b, K) float64 zeros
        document_topic,  # (n, K) float64 zeros
    ):
        n_topics = beta_t.shape[1]
        k0 = np.uint64(key[0])
        k1 = np.uint64(key[1])
        for d in range(cuda.grid(1), offsets.shape[0] - 1, cuda.gridsize(1)):
            start = offsets[d]
            end = offsets[d + 1]
            n_used = 0
            for j in range(start, end):
                k = z[j]
                if counts[d, k] == 0.0:
                    topics[d, n_used] = k
                    where[d, k] = n_used
                    n_used += 1
                counts[d, k] += 1.0
            for s in range(sweeps):
                keep = s >= burn_in
                for j in range(start, end):
                    w = local[j]
                    k_old = z[j]
                    counts[d, k_old] -= 1.0
                    if counts[d, k_old] == 0.0:
                        last = topics[d, n_used - 1]
                        topics[d, where[d, k_old]] = last
                        where[d, last] = where[d, k_old]
                        n_used -= 1
                    sparse = 0.0
                    for i in range(n_used):
                        k = topics[d, i]
                        weight = counts[d, k] * beta_t[w, k]
                        weights[d, i] = weight
                        sparse += weight
                    total = sparse + dense_scale * cdf[w, n_topics - 1]
                    u = uniform(k0, k1, base + j, s) * total
                    k_new = k_old
                    if not total > 0.0:
                        k_new = k_old
                    elif u < sparse:
                        # The current topic first, then the list (as the CPU kernel).
                        w_old = counts[d, k_old] * beta_t[w, k_old]
                        if not u < w_old:
                            u -= w_old
                            running = 0.0
                            for i in range(n_used):
                                k = topics[d, i]
                                if k != k_old and weights[d, i] > 0.0:
                                    k_new = k
                                    running += weights[d, i]
                                    if running > u:
                                        break
                    else:
                        target = (u - sparse) / dense_scale
                        lo = 0
                        hi = n_topics - 1
                        while lo < hi:
                            mid = (lo + hi) // 2
                            if cdf[w, mid] <= target:
                                lo = mid + 1
                            else:
                                hi = mid
                        while lo > 0 and beta_t[w, lo] == 0.0:
                            lo -= 1
                        k_new = lo
                    n_sparse = n_used
                    if counts[d, k_new] == 0.0:
                        topics[d, n_used] = k_new
                        where[d, k_new] = n_used
                        n_used += 1
                    counts[d, k_new] += 1.0
                    z[j] = k_new
                    if keep:
                        if not rao_blackwell:
                            document_topic[d, k_new] += 1.0
                            if word_sums:
                                cuda.atomic.add(word_topic, (w, k_new), 1.0)
                        elif total > 0.0:
                            scale = 1.0 / total
                            for i in range(n_sparse):
                                k = topics[d, i]
                                p = weights[d, i] * scale
                                document_topic[d, k] += p
                                if word_sums:
                                    cuda.atomic.add(word_topic, (w, k), p)
                            inv_z[j] += scale
            if rao_blackwell:  # the dense part, gamma_k beta_kw / Z, once per token
                for j in range(start, end):
                    w = local[j]
                    c = inv_z[j]
                    for k in range(n_topics):
                        p = gamma[k] * c * beta_t[w, k]
                        document_topic[d, k] += p
                        if word_sums:
                            cuda.atomic.add(word_topic, (w, k), p)

    return sparse_gibbs_cuda


def device_columns(beta: torch.Tensor, words: torch.Tensor) -> Columns:
    """beta's columns of the distinct ``words`` and their running sums, gathered on beta's
    device (only K x W_b is touched; nothing goes through the host)."""
    ids, local = torch.unique(words.to(beta.device), return_inverse=True)
    beta_t = beta.detach()[:, ids].T.to(torch.float64).contiguous()
    return Columns(ids, local.reshape(-1), beta_t, torch.cumsum(beta_t, dim=1))


@functools.cache
def _kernel() -> Any:
    """The kernel, built once per process (compiled on its first launch)."""
    return _build()


def sparse_collapsed_gibbs_cuda(
    columns: Columns,
    offsets: torch.Tensor,
    gamma: Gamma,
    z: torch.Tensor,
    key: torch.Tensor,
    token_base: int,
    sweeps: int,
    burn_in: int,
    rao_blackwell: bool,
    word_sums: bool = True,
    threads: int = 64,
) -> tuple[torch.Tensor | None, torch.Tensor]:
    """As lda.gibbs.sparse.sparse_collapsed_gibbs (the kept sweeps' float64 sums by distinct
    word, or None, and by document), with the Philox ``key`` (two int64 in [0, 2^32)) and the
    global index of token 0 in place of pre-drawn uniforms. CPU tensors run in the simulator."""
    if not simulated() and not available():
        raise RuntimeError("the sparse CUDA kernel needs a CUDA device numba can compile for")
    run = torch.device("cpu") if simulated() else torch.device("cuda")
    n_local, n_topics = columns.beta_t.shape
    n_docs = int(offsets.numel()) - 1
    n_tokens = int(columns.local.numel())

    def zeros(*shape: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        return torch.zeros(shape, dtype=dtype, device=run)

    word_topic = zeros(n_local if word_sums else 1, n_topics)
    document_topic = zeros(n_docs, n_topics)
    vector = torch.from_numpy(gamma_vector(gamma, n_topics)).to(run)
    value = symmetric_value(gamma)
    beta_run = columns.beta_t.to(run)
    if value is None:  # the dense part's own running sums (lda.gibbs.sparse.dense_part)
        dense_cdf, dense_scale = torch.cumsum(beta_run * vector[None, :], dim=1), 1.0
    else:
        dense_cdf, dense_scale = columns.cdf.to(run), value
    args = [
        columns.local.to(run), offsets.to(run, torch.int64), beta_run,
        dense_cdf, dense_scale, vector, z.to(run, torch.int64, copy=True),
        key.to(run, torch.int64), int(token_base), int(sweeps), int(burn_in),
        bool(rao_blackwell), bool(word_sums), zeros(n_docs, n_topics),
        zeros(n_docs, n_topics, dtype=torch.int64), zeros(n_docs, n_topics, dtype=torch.int64),
        zeros(n_docs, n_topics), zeros(n_tokens), word_topic, document_topic,
    ]  # fmt: skip
    if n_docs and n_tokens:
        blocks = (n_docs + threads - 1) // threads
        if simulated():
            launch = [a.numpy() if isinstance(a, torch.Tensor) else a for a in args]
            _kernel()[blocks, threads](*launch)
        else:
            launch = [
                cuda.as_cuda_array(a, sync=False) if isinstance(a, torch.Tensor) else a
                for a in args
            ]
            stream = cuda.external_stream(torch.cuda.current_stream(run).cuda_stream)
            _kernel()[blocks, threads, stream](*launch)
    return (word_topic if word_sums else None), document_topic
