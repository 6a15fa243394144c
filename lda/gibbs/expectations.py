"""Gibbs expectations of topic counts for a minibatch with beta fixed (docs/model.md, Eq. S.19).

Each document is sampled separately, pi_d collapsed unless ``uncollapsed``; every call starts
from a fresh random assignment (uniform, or ``init="beta"``: each token's topic drawn from
p(k | w) ∝ beta_kw, which cuts the burn-in the held-out scorer needs), discards ``burn_in``
sweeps and averages the kept ones: the 0/1
indicators (``exact``) or the conditional probabilities (``rao-blackwell``, same expectation,
lower variance).
The collapsed sampler runs in a compiled CPU kernel, all documents in parallel: the dense one
(O(K) per token-sweep, a (T, K) array of sums; a torch twin that advances every document one
token position at a time consumes the same uniforms and gives the same numbers, but costs ~10
kernel launches per position on a GPU) or, for large K x W (``sparse_pays``), the exact sparse
one (:mod:`lda.gibbs.sparse`: O(K_d) for the K_d topics a document uses, only the
minibatch's
columns of beta, sums by word and by document; the same law, not the same draws); or, when
beta is on a CUDA device, in a CUDA kernel (:mod:`lda.gibbs.dense_cuda`: every sweep
in one launch,
a block per document, its own counter-based random stream, the sums reduced on the device; the
same law, not the same draws). ``uncollapsed`` draws pi_d and then every token at once, in
whole-minibatch tensor operations that suit a GPU; its held-out perplexity is within 1% of the
collapsed sampler's for SGRLD but 1.4% worse for SGRHMC over two seeds (BENCHMARKS.md), so it
is not the default.
SparseLDA buckets and alias-table Metropolis-Hastings variants were measured at K = 50 and gave
no speed-up there (BENCHMARKS.md).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numba
import numpy as np
import torch

from lda.batch import Batch
from lda.config import Backend, Init, Kernel, Method  # their home: lda.config
from lda.parallel import Shard

# The CPU kernel of the collapsed methods: dense is O(K) per token-sweep, transposes all of beta
# and keeps a (T, K) array; sparse (lda.gibbs.sparse) is O(K_d), the topics a document
# uses,
# reads the minibatch's columns of beta and keeps sums by word and by document only; auto: sparse
# from SPARSE_MIN_TOPICS topics or SPARSE_MIN_CELLS entries of beta on. Measured with the block
# draw for crowded documents (benchmarks/gibbs_sparse.py --threads 2 --topics 50,100,200 --words
# 7702,50000, learner calls on 100 DEV articles, ns per token-sweep, dense / sparse): W = 7,702,
# K = 50 57.9 / 57.6 (a tie), K = 100 116 / 84, K = 200 316 / 151; W = 50,000, K = 50 94 / 80,
# K = 100 250 / 125, K = 200 560 / 269. The scorer's calls (--scorer) favour sparse at every one
# of these sizes (K = 50, W = 7,702: 47.9 / 43.8).
# On a CUDA device "auto" keeps the dense CUDA kernel: the sparse one
# (lda.gibbs.sparse_cuda)
# runs when asked for ("sparse") until a GPU has measured where it pays
# (benchmarks/gpu_gibbs.py --kernels dense,sparse).
SPARSE_MIN_TOPICS = 64
SPARSE_MIN_CELLS = 2_000_000


def sparse_pays(n_topics: int, n_words: int) -> bool:
    """Whether kernel="auto" runs the sparse kernel for a K x W beta (see :data:`Kernel`)."""
    return n_topics >= SPARSE_MIN_TOPICS or n_topics * n_words >= SPARSE_MIN_CELLS


@dataclass(frozen=True)
class GibbsExpectations:
    """Expected topic indicators of each token, averaged over the kept sweeps. The CUDA kernel
    keeps no per-token sums (``summed`` is None): it hands over the sums already reduced by
    word and by document on the device."""

    summed: torch.Tensor | None  # (T, K) kept-sweep indicator counts (or conditionals), any dtype
    kept: int  # sweeps summed
    dtype: torch.dtype  # of the expectations handed out
    batch: Batch
    topic_word_sums: torch.Tensor | None = None  # (K, W) or (K, W_b) float64 kept-sweep sums
    document_topic_sums: torch.Tensor | None = None  # (n, K) float64, kept-sweep sums
    # (W_b,) the word of each column of topic_word_sums (sparse kernel: the minibatch's distinct
    # words); None: the columns are all W words (CUDA kernel)
    topic_words: torch.Tensor | None = None

    @property
    def token_topics(self) -> torch.Tensor:
        """(T, K) E[1{z_j = k}]; rows sum to 1."""
        if self.summed is None:
            raise ValueError(
                "the CUDA and sparse Gibbs kernels reduce by word and document: this result "
                "keeps no per-token expectations; use document_topic() / topic_word(), or "
                "backend='cpu' with kernel='dense'"
            )
        return (self.summed.to(torch.float64) / self.kept).to(self.dtype)

    def document_topic(self) -> torch.Tensor:
        """(n, K) E[n_dk]: expected tokens of each topic in each document."""
        if self.document_topic_sums is not None:
            return (self.document_topic_sums / self.kept).to(self.dtype)
        if self.summed is None:
            raise ValueError("document_topic was not accumulated (need_document_topic=False)")
        if self.summed.device.type == "cpu":
            # One pass over the raw counts, as topic_word: no (T, K) float copy (the held-out
            # scorer's chunks are 100,000 tokens, a 40 MB copy and a third of a 2-sweep score).
            from lda.gibbs.dense import add_by_document

            out64 = torch.zeros(self.batch.n_documents, self.summed.shape[1], dtype=torch.float64)
            add_by_document(
                self.batch.offsets.numpy(), self.summed.numpy(), self.kept, out64.numpy()
            )
            return out64.to(self.dtype)
        token_topics = self.token_topics
        n, k = self.batch.n_documents, token_topics.shape[1]
        out = torch.zeros(n, k, dtype=token_topics.dtype, device=token_topics.device)
        return out.index_add_(0, self.batch.document_index(), token_topics)

    def topic_word_kept_sums(self, n_words: int) -> tuple[torch.Tensor, int]:
        """(the K x n_words sum over documents of E[n_dkw], times d; d): d = the kept sweeps
        when the sparse kernel's sums cover every column as they are (the caller divides, e.g.
        folded into a step's scale: no pass over K x W_b to divide), else 1."""
        if self.topic_word_sums is not None and self._every_column(n_words):
            return self.topic_word_sums, self.kept
        return self.topic_word(n_words), 1

    def _every_column(self, n_words: int) -> bool:
        """Whether the sparse kernel's word sums are the n_words columns themselves (a caller
        that renumbered the minibatch's words, as the lazy SCIR chain does): no scatter."""
        return self.topic_words is not None and self.topic_words.numel() == n_words

    def topic_word(self, n_words: int) -> torch.Tensor:
        """(K, W) sum over documents of E[n_dkw]."""
        if self.summed is None:
            sums = self.topic_word_sums
            if sums is None:
                raise ValueError("topic_word was not accumulated (need_topic_word=False)")
            if self._every_column(n_words):  # in the kernel's word-major layout
                return (sums / self.kept).to(self.dtype)
            if self.topic_words is not None:
                from lda.gibbs.sparse import scatter_topic_word

                return scatter_topic_word(
                    self.topic_words, sums, 1.0 / self.kept, n_words, self.dtype
                )
            if sums.shape[1] != n_words:
                raise ValueError(f"topic_word has {sums.shape[1]} words, asked for {n_words}")
            return (sums / self.kept).to(self.dtype)
        if self.summed.device.type == "cpu":
            # One pass over the raw counts: the (T, K) float conversion, division and
            # index_add took 15 ms of a 50-document minibatch, this 2.4 ms. Same sums, same order.
            from lda.gibbs.dense import add_by_word

            k = self.summed.shape[1]
            out = torch.zeros(k, n_words, dtype=torch.float64)
            add_by_word(self.batch.words.numpy(), self.summed.numpy(), self.kept, out.numpy())
            return out.to(self.dtype)
        token_topics = self.token_topics
        k = token_topics.shape[1]
        out = torch.zeros(n_words, k, dtype=token_topics.dtype, device=token_topics.device)
        return out.index_add_(0, self.batch.words, token_topics).T.contiguous()

    def topic_word_compact(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(W_b,) the minibatch's distinct word ids, ascending, and (K, W_b) the sum over
        documents of E[n_dkw] for those words: topic_word() without its zero columns."""
        if self.topic_words is not None:
            if self.topic_word_sums is None:
                raise ValueError("topic_word was not accumulated (need_topic_word=False)")
            return self.topic_words, (self.topic_word_sums / self.kept).to(self.dtype)
        words = self.batch.words
        # numpy's unique: torch.unique took ~300 ms on a 34k-token minibatch here.
        ids = torch.from_numpy(np.unique(words.cpu().numpy())).to(words.device, torch.int64)
        if self.topic_word_sums is not None:
            return ids, (
                self.topic_word_sums[:, ids.to(self.topic_word_sums.device)] / self.kept
            ).to(self.dtype)
        n_words = int(ids[-1]) + 1 if ids.numel() else 0
        return ids, self.topic_word(n_words)[:, ids]


def gibbs_expectations(
    beta: torch.Tensor,
    batch: Batch,
    gamma: float,
    sweeps: int,
    burn_in: int,
    generator: torch.Generator,
    method: Method = "exact",
    backend: Backend = "auto",
    init: Init = "uniform",
    shard: Shard | None = None,
    need_topic_word: bool = True,
    kernel: Kernel = "auto",
    need_document_topic: bool = True,
) -> GibbsExpectations:
    """Run Gibbs on every document of ``batch`` and average the kept sweeps.

    The collapsed methods run in the compiled CPU kernel, or in the CUDA kernel when beta is on
    a CUDA device (``backend``: see :data:`Backend`). With a ``shard`` the batch is one rank's
    part of a larger minibatch: the draws are made for all its tokens and this rank's slice
    used (see :mod:`lda.parallel`). ``need_topic_word=False`` lets the CUDA and sparse kernels
    skip the word sums when only ``document_topic`` will be read (the held-out scorer), and
    ``need_document_topic=False`` the sparse kernel the document sums (the learner's step).
    ``kernel`` picks the kernel of the collapsed methods (see :data:`Kernel`).
    """
    if not 0 <= burn_in < sweeps:
        raise ValueError(f"need 0 <= burn_in < sweeps, got burn_in={burn_in}, sweeps={sweeps}")
    shard = shard or Shard(0, batch.n_tokens)
    if method == "uncollapsed" and shard.total != batch.n_tokens:
        raise ValueError("uncollapsed Gibbs draws per document: it cannot be split over ranks")
    n_topics = beta.shape[0]
    device = beta.device
    words = batch.words.to(device)
    if backend == "auto":
        backend = "cuda" if device.type == "cuda" and _cuda_kernel_usable() else "cpu"
    use_kernel = backend == "cpu"
    own = batch.n_tokens
    if kernel == "auto":
        kernel = "sparse" if use_kernel and sparse_pays(n_topics, beta.shape[1]) else "dense"
    if kernel == "sparse" and method != "uncollapsed" and backend in ("cpu", "cuda"):
        return _run_sparse(
            beta, batch, gamma, sweeps, burn_in, generator, method, init, shard,
            need_topic_word, need_document_topic, on_device=not use_kernel,
        )  # fmt: skip
    if init == "beta":
        compiled = use_kernel and method != "uncollapsed"
        z = topics_from_beta(beta, words, generator, compiled, shard)
    else:
        z = shard.take(
            torch.randint(n_topics, (shard.total,), generator=generator, device=device), own
        )
    if method == "uncollapsed":
        summed = _run_uncollapsed(beta, words, batch, gamma, z, sweeps, burn_in, generator)
        return _expectations(summed, sweeps - burn_in, beta.dtype, words, batch)
    if backend == "cuda":
        from lda.gibbs.dense_cuda import collapsed_gibbs_cuda

        # The kernel's Philox key; its counter is (global token index, sweep), so every rank
        # of a group (same generator) draws what one learner would for its tokens.
        key = torch.randint(0, 2**32, (2,), generator=generator, device=device)
        topic_word, document_topic = collapsed_gibbs_cuda(
            beta, words, batch.offsets, gamma, z, key, shard.start, sweeps, burn_in,
            method == "rao-blackwell", word_sums=need_topic_word,
        )  # fmt: skip
        return GibbsExpectations(
            summed=None,
            kept=sweeps - burn_in,
            dtype=beta.dtype,
            batch=Batch(words, batch.offsets),
            topic_word_sums=topic_word,
            document_topic_sums=document_topic,
        )
    uniforms = torch.rand((sweeps, shard.total), generator=generator, device=device)
    if own != shard.total:
        uniforms = shard.take(uniforms, own).contiguous()
    run = _run_kernel if use_kernel else _run_torch
    summed = run(beta, words, batch.offsets, gamma, z, uniforms, burn_in, method == "rao-blackwell")
    return _expectations(summed, sweeps - burn_in, beta.dtype, words, batch)


def _run_sparse(
    beta: torch.Tensor,
    batch: Batch,
    gamma: float,
    sweeps: int,
    burn_in: int,
    generator: torch.Generator,
    method: Method,
    init: Init,
    shard: Shard,
    need_topic_word: bool,
    need_document_topic: bool,
    on_device: bool,
) -> GibbsExpectations:
    """The collapsed methods in the sparse kernel, from the minibatch's columns of beta only:
    the generator gives the start, then the CPU kernel's uniforms or (``on_device``, the CUDA
    kernel, columns gathered on beta's device) a Philox key, whose counter is the global token
    index so every rank of a group draws what one learner would. The CUDA kernel keeps the
    document sums whatever ``need_document_topic`` says."""
    from lda.gibbs.sparse import (
        gather_columns,
        sparse_collapsed_gibbs,
        topics_from_columns,
    )

    if on_device:  # numba's CUDA target is imported only where it runs
        from lda.gibbs.sparse_cuda import device_columns, sparse_collapsed_gibbs_cuda

    device = beta.device
    own = batch.n_tokens
    words = batch.words.to(device)
    columns = device_columns(beta, words) if on_device else gather_columns(beta, words)
    if init == "beta":
        u = shard.take(
            torch.rand(shard.total, generator=generator, device=device, dtype=torch.float64), own
        )
        if on_device:
            z = _draw_by_word_torch(columns.cdf, columns.local, u)
        else:
            z = topics_from_columns(columns, u)
    else:
        z = shard.take(
            torch.randint(beta.shape[0], (shard.total,), generator=generator, device=device), own
        )
    rao_blackwell = method == "rao-blackwell"
    topic_word: torch.Tensor | None
    document_topic: torch.Tensor | None
    if on_device:
        key = torch.randint(0, 2**32, (2,), generator=generator, device=device)
        topic_word, document_topic = sparse_collapsed_gibbs_cuda(
            columns, batch.offsets, gamma, z, key, shard.start, sweeps, burn_in, rao_blackwell,
            word_sums=need_topic_word,
        )  # fmt: skip
    else:
        uniforms = torch.rand((sweeps, shard.total), generator=generator, device=device)
        if own != shard.total:
            uniforms = shard.take(uniforms, own).contiguous()
        topic_word, document_topic = sparse_collapsed_gibbs(
            columns, batch.offsets, gamma, z, uniforms, burn_in, rao_blackwell,
            need_topic_word, need_document_topic,
        )  # fmt: skip
    return GibbsExpectations(
        summed=None,
        kept=sweeps - burn_in,
        dtype=beta.dtype,
        batch=Batch(words, batch.offsets),
        topic_word_sums=None if topic_word is None else topic_word.to(device).T,
        document_topic_sums=None if document_topic is None else document_topic.to(device),
        topic_words=columns.word_ids.to(device),
    )


def _cuda_kernel_usable() -> bool:
    """numba can compile for this machine's CUDA device; if not (e.g. no NVVM in the image), the
    CPU kernel runs, as before the CUDA kernel existed, with a warning."""
    from lda.gibbs.dense_cuda import available

    if available():
        return True
    warnings.warn(
        "beta is on a CUDA device but numba cannot compile for it (no driver or NVVM; "
        "pip install 'streamlda[cuda]' brings NVVM): collapsed Gibbs runs in the CPU kernel",
        RuntimeWarning,
        stacklevel=3,
    )
    return False


def topics_from_beta(
    beta: torch.Tensor,
    words: torch.Tensor,
    generator: torch.Generator,
    use_kernel: bool,
    shard: Shard | None = None,
) -> torch.Tensor:
    """One topic per token from p(k | w) ∝ beta_kw (the chain's start for ``init="beta"``)."""
    shard = shard or Shard(0, words.numel())
    u = torch.rand(shard.total, generator=generator, device=beta.device, dtype=torch.float64)
    u = shard.take(u, words.numel())
    cdf_t = beta.detach().T.to(torch.float64).cumsum(dim=1)  # (W, K)
    cdf_t = cdf_t / cdf_t[:, -1:]
    if use_kernel:
        from lda.gibbs.dense import draw_by_word

        z_np = np.empty(words.numel(), dtype=np.int64)
        draw_by_word(words.cpu().numpy(), cdf_t.cpu().numpy(), u.cpu().numpy(), z_np)
        return torch.from_numpy(z_np).to(beta.device)
    return _draw_by_word_torch(cdf_t, words, u)


# Entries of the (tokens, K) running sums one chunk of a device draw gathers: 128 MB in float64.
DRAW_CHUNK_ENTRIES = 1 << 24


def _draw_by_word_torch(cdf_t: torch.Tensor, words: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """One topic per token from its word's row of running sums ``cdf_t`` (rows need not end at
    1), in torch on any device, a chunk of tokens at a time so that the gathered rows stay
    bounded (at K = 1,000 a 5,000-document minibatch would gather 19 GB at once)."""
    n_topics = cdf_t.shape[1]
    step = max(1, DRAW_CHUNK_ENTRIES // max(1, n_topics))
    z = torch.empty(words.numel(), dtype=torch.int64, device=cdf_t.device)
    for a in range(0, words.numel(), step):
        rows = cdf_t[words[a : a + step]]
        target = (u[a : a + step] * rows[:, -1]).unsqueeze(1)
        z[a : a + step] = torch.searchsorted(rows, target, right=True).squeeze(1)
    return z.clamp_(max=n_topics - 1)


def _expectations(
    summed: torch.Tensor, kept: int, dtype: torch.dtype, words: torch.Tensor, batch: Batch
) -> GibbsExpectations:
    return GibbsExpectations(
        summed=summed, kept=kept, dtype=dtype, batch=Batch(words, batch.offsets)
    )


def _run_kernel(
    beta: torch.Tensor,
    words: torch.Tensor,
    offsets: torch.Tensor,
    gamma: float,
    z: torch.Tensor,
    uniforms: torch.Tensor,
    burn_in: int,
    rao_blackwell: bool,
) -> torch.Tensor:
    from lda.gibbs.dense import balanced_schedule, collapsed_gibbs

    beta_t = beta.detach().T.to("cpu", torch.float64).contiguous().numpy()
    z_np = z.to("cpu").numpy().copy()
    # Indicator counts as uint16: a 2-byte row per token keeps the kept sweeps' writes in cache.
    kept = uniforms.shape[0] - burn_in
    dtype = np.float64 if rao_blackwell or kept > np.iinfo(np.uint16).max else np.uint16
    out = np.zeros((words.numel(), beta.shape[0]), dtype=dtype)
    offsets_np = offsets.to("cpu").numpy()
    schedule, bounds = balanced_schedule(np.diff(offsets_np), numba.get_num_threads())
    collapsed_gibbs(
        words.to("cpu").numpy(),
        offsets_np,
        schedule,
        bounds,
        beta_t,
        float(gamma),
        z_np,
        uniforms.to("cpu").numpy(),
        burn_in,
        rao_blackwell,
        out,
    )
    return torch.from_numpy(out).to(beta.device)


def _run_torch(
    beta: torch.Tensor,
    words: torch.Tensor,
    offsets: torch.Tensor,
    gamma: float,
    z: torch.Tensor,
    uniforms: torch.Tensor,
    burn_in: int,
    rao_blackwell: bool,
) -> torch.Tensor:
    """All documents advance together, one token position per step."""
    device = beta.device
    n_topics = beta.shape[0]
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


def _run_uncollapsed(
    beta: torch.Tensor,
    words: torch.Tensor,
    batch: Batch,
    gamma: float,
    z: torch.Tensor,
    sweeps: int,
    burn_in: int,
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
    for s in range(sweeps):
        counts = torch.bincount(doc * n_topics + z, minlength=n_docs * n_topics)
        concentration = gamma + counts.view(n_docs, n_topics).to(rows.dtype)
        pi = torch._sample_dirichlet(concentration, generator=generator)
        weights = pi[doc] * rows
        total = weights.sum(dim=1, keepdim=True)
        # pi can underflow to 0 on every topic a word has mass in (gamma << 1): beta decides.
        conditional = torch.where(total > 0, weights / total, fallback)
        u = torch.rand(
            (words.numel(), 1), generator=generator, device=beta.device, dtype=rows.dtype
        )
        z = torch.searchsorted(conditional.cumsum(dim=1), u, right=True).clamp_(max=n_topics - 1)
        z = z[:, 0]
        if s >= burn_in:
            out += conditional
    return out
