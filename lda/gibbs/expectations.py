"""Gibbs expectations of a minibatch's topic counts with beta fixed (docs/model.md, Eq. S.19):
one way in, :func:`gibbs_expectations`, over every backend.

Each document is sampled separately, pi_d collapsed unless the method is ``uncollapsed``. Every
call starts from a fresh assignment (uniform, or drawn from p(k | w) ∝ beta_kw, which shortens
the burn-in the held-out scorer needs), discards the burn-in sweeps and averages the kept ones:
the 0/1 indicators (``exact``) or the conditional probabilities (``rao-blackwell``: the same
expectation, lower variance).

:func:`pick_implementation` chooses, in one place, which of five runners does the work; each
takes the same arguments and hands back a :class:`GibbsExpectations`:

* ``dense``: the compiled CPU kernel (:mod:`lda.gibbs.dense`), all documents in parallel, O(K)
  per token-sweep;
* ``sparse``: the exact sparse CPU kernel (:mod:`lda.gibbs.sparse`), O(K_d) for the K_d topics a
  document uses, reading only the minibatch's columns of beta and keeping sums by word and by
  document only: the dense kernel's law, not its draws;
* ``dense_cuda`` and ``sparse_cuda``: their CUDA twins (:mod:`lda.gibbs.dense_cuda`,
  :mod:`lda.gibbs.sparse_cuda`), every sweep in one launch with a counter-based random stream
  and the sums reduced on the device: the same law, not the same draws;
* ``reference``: torch (:mod:`lda.gibbs.reference`), the dense kernel's twin draw for draw and
  the only home of the uncollapsed sampler, which draws pi_d and then every token at once.

The uncollapsed chain suits a GPU but mixes more slowly, and its held-out perplexity trails the
collapsed chain's for some samplers, so it is not the default; bucketed (SparseLDA) and
alias-table Metropolis-Hastings draws did not pay where they were tried. docs/defaults.md ("Gibbs
method and sweeps", "The sparse kernel's thresholds") has the measurements behind these choices.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Literal

import numba
import numpy as np
import torch

from lda.batch import Batch
from lda.gamma import gamma_vector
from lda.gibbs.config import GibbsConfig
from lda.gibbs.reference import run_reference
from lda.gibbs.result import GibbsExpectations
from lda.gibbs.start import (
    draw_by_word_torch,
    start_topics,
    start_uniforms,
    sweep_uniforms,
    uniform_topics,
)
from lda.parallel import Shard

# kernel="auto" on the CPU runs the sparse kernel from SPARSE_MIN_TOPICS topics, or from
# SPARSE_MIN_CELLS entries of beta, on. Below both, the dense kernel's O(K) per token-sweep costs
# no more than the sparse kernel's O(K_d) and its bookkeeping; past either, the sparse kernel is
# faster, and more so as K and W grow. The thresholds come from timing the learner's and the
# held-out scorer's calls with `python -m benchmarks.gibbs_sparse` (docs/defaults.md, "The sparse
# kernel's thresholds", has the figures). On a CUDA device "auto" keeps the dense CUDA kernel:
# the sparse one runs when asked for until a GPU has measured where it pays
# (`python -m benchmarks.gpu_gibbs --kernel sparse`, against its default dense).
SPARSE_MIN_TOPICS = 64
SPARSE_MIN_CELLS = 2_000_000

# Which runner does the work (see the module's docstring).
Implementation = Literal["reference", "dense", "sparse", "dense_cuda", "sparse_cuda"]
Runner = Callable[[torch.Tensor, Batch, GibbsConfig, torch.Generator, Shard], GibbsExpectations]


def sparse_pays(n_topics: int, n_words: int) -> bool:
    """Whether kernel="auto" runs the sparse kernel on the CPU for a K x W beta."""
    return n_topics >= SPARSE_MIN_TOPICS or n_topics * n_words >= SPARSE_MIN_CELLS


def gibbs_expectations(
    beta: torch.Tensor,
    batch: Batch,
    config: GibbsConfig,
    generator: torch.Generator,
    shard: Shard | None = None,
) -> GibbsExpectations:
    """Run Gibbs on every document of ``batch`` with beta fixed and average the kept sweeps.

    With a ``shard`` the batch is one rank's part of a larger minibatch: the draws are made for
    all its tokens and this rank's slice used (see :mod:`lda.parallel`).
    """
    shard = shard or Shard(0, batch.n_tokens)
    run = _RUNNERS[pick_implementation(beta, config)]
    return run(beta, batch, config, generator, shard)


def pick_implementation(beta: torch.Tensor, config: GibbsConfig) -> Implementation:
    """Which runner ``config`` asks for on this ``beta``: the backend ("auto": the CUDA kernels
    when beta is on a CUDA device numba can compile for, else the CPU's), then the kernel of
    the collapsed methods ("auto": sparse on the CPU where :func:`sparse_pays`, else dense).
    The uncollapsed method and the torch backend run in the torch reference."""
    backend = config.backend
    if backend == "auto":
        backend = "cuda" if beta.device.type == "cuda" and _cuda_kernel_usable() else "cpu"
    if config.method == "uncollapsed" or backend == "torch":
        return "reference"
    kernel = config.kernel
    if kernel == "auto":
        pays = backend == "cpu" and sparse_pays(beta.shape[0], beta.shape[1])
        kernel = "sparse" if pays else "dense"
    if backend == "cuda":
        return "sparse_cuda" if kernel == "sparse" else "dense_cuda"
    return kernel


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
        stacklevel=4,  # gibbs_expectations' caller
    )
    return False


def _run_dense(
    beta: torch.Tensor,
    batch: Batch,
    config: GibbsConfig,
    generator: torch.Generator,
    shard: Shard,
) -> GibbsExpectations:
    """The compiled dense CPU kernel: per-token sums, handed back on beta's device."""
    from lda.gibbs.dense import balanced_schedule, collapsed_gibbs

    words = batch.words.to(beta.device)
    z = start_topics(beta, words, config, generator, shard, compiled=True)
    uniforms = sweep_uniforms(config.sweeps, generator, shard, batch.n_tokens, beta.device)
    beta_t = beta.detach().T.to("cpu", torch.float64).contiguous().numpy()
    z_np = z.to("cpu").numpy().copy()
    # Indicator counts as uint16: a 2-byte row per token keeps the kept sweeps' writes in cache.
    rao_blackwell = config.rao_blackwell
    dtype = np.float64 if rao_blackwell or config.kept > np.iinfo(np.uint16).max else np.uint16
    out = np.zeros((words.numel(), beta.shape[0]), dtype=dtype)
    offsets_np = batch.offsets.to("cpu").numpy()
    schedule, bounds = balanced_schedule(np.diff(offsets_np), numba.get_num_threads())
    collapsed_gibbs(
        words.to("cpu").numpy(),
        offsets_np,
        schedule,
        bounds,
        beta_t,
        gamma_vector(config.gamma, beta.shape[0]),
        z_np,
        uniforms.to("cpu").numpy(),
        config.burn_in,
        rao_blackwell,
        out,
    )
    return GibbsExpectations(
        summed=torch.from_numpy(out).to(beta.device),
        kept=config.kept,
        dtype=beta.dtype,
        batch=Batch(words, batch.offsets),
    )


def _run_dense_cuda(
    beta: torch.Tensor,
    batch: Batch,
    config: GibbsConfig,
    generator: torch.Generator,
    shard: Shard,
) -> GibbsExpectations:
    """The dense CUDA kernel: sums by word and by document, reduced on the device."""
    from lda.gibbs.dense_cuda import collapsed_gibbs_cuda

    words = batch.words.to(beta.device)
    z = start_topics(beta, words, config, generator, shard, compiled=False)
    topic_word, document_topic = collapsed_gibbs_cuda(
        beta, words, batch.offsets, config.gamma, z, _philox_key(generator, beta.device),
        shard.start, config.sweeps, config.burn_in, config.rao_blackwell,
        word_sums=config.need_topic_word,
    )  # fmt: skip
    return GibbsExpectations(
        summed=None,
        kept=config.kept,
        dtype=beta.dtype,
        batch=Batch(words, batch.offsets),
        topic_word_sums=topic_word,
        document_topic_sums=document_topic,
    )


def _run_sparse(
    beta: torch.Tensor,
    batch: Batch,
    config: GibbsConfig,
    generator: torch.Generator,
    shard: Shard,
) -> GibbsExpectations:
    """The sparse CPU kernel, from the minibatch's columns of beta only."""
    from lda.gibbs.sparse import gather_columns, sparse_collapsed_gibbs, topics_from_columns

    device, own = beta.device, batch.n_tokens
    words = batch.words.to(device)
    columns = gather_columns(beta, words)
    if config.init == "beta":
        z = topics_from_columns(columns, start_uniforms(generator, shard, own, device))
    else:
        z = uniform_topics(beta.shape[0], generator, shard, own, device)
    uniforms = sweep_uniforms(config.sweeps, generator, shard, own, device)
    topic_word, document_topic = sparse_collapsed_gibbs(
        columns, batch.offsets, config.gamma, z, uniforms, config.burn_in, config.rao_blackwell,
        config.need_topic_word, config.need_document_topic,
    )  # fmt: skip
    return _sparse_result(beta, words, batch, config, columns.word_ids, topic_word, document_topic)


def _run_sparse_cuda(
    beta: torch.Tensor,
    batch: Batch,
    config: GibbsConfig,
    generator: torch.Generator,
    shard: Shard,
) -> GibbsExpectations:
    """The sparse CUDA kernel, from the minibatch's columns gathered on beta's device. It keeps
    the document sums whatever ``need_document_topic`` says."""
    # numba's CUDA target is imported only where it runs
    from lda.gibbs.sparse_cuda import device_columns, sparse_collapsed_gibbs_cuda

    device, own = beta.device, batch.n_tokens
    words = batch.words.to(device)
    columns = device_columns(beta, words)
    if config.init == "beta":
        u = start_uniforms(generator, shard, own, device)
        z = draw_by_word_torch(columns.cdf, columns.local, u)
    else:
        z = uniform_topics(beta.shape[0], generator, shard, own, device)
    topic_word, document_topic = sparse_collapsed_gibbs_cuda(
        columns, batch.offsets, config.gamma, z, _philox_key(generator, device), shard.start,
        config.sweeps, config.burn_in, config.rao_blackwell, word_sums=config.need_topic_word,
    )  # fmt: skip
    return _sparse_result(beta, words, batch, config, columns.word_ids, topic_word, document_topic)


def _philox_key(generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """The CUDA kernels' Philox key; its counter is (global token index, sweep), so every rank
    of a group (same generator) draws what one learner would for its tokens."""
    return torch.randint(0, 2**32, (2,), generator=generator, device=device)


def _sparse_result(
    beta: torch.Tensor,
    words: torch.Tensor,
    batch: Batch,
    config: GibbsConfig,
    word_ids: torch.Tensor,
    topic_word: torch.Tensor | None,
    document_topic: torch.Tensor | None,
) -> GibbsExpectations:
    """A sparse kernel's sums (by distinct word, word-major, and by document) on beta's device."""
    device = beta.device
    return GibbsExpectations(
        summed=None,
        kept=config.kept,
        dtype=beta.dtype,
        batch=Batch(words, batch.offsets),
        topic_word_sums=None if topic_word is None else topic_word.to(device).T,
        document_topic_sums=None if document_topic is None else document_topic.to(device),
        topic_words=word_ids.to(device),
    )


_RUNNERS: dict[Implementation, Runner] = {
    "reference": run_reference,
    "dense": _run_dense,
    "sparse": _run_sparse,
    "dense_cuda": _run_dense_cuda,
    "sparse_cuda": _run_sparse_cuda,
}
