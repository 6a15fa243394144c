"""The collapsed Gibbs sampler of Eq. S.19 on a CUDA device (numba), every sweep in one launch.

Layout: one block per document, its threads spread over the K topics (thread t owns the
contiguous topics ``[t*c, (t+1)*c)``, c = ceil(K / threads)); the document's counts n_dk live in
shared memory, beta^T (W, K) is read from global memory. Per token: every thread computes its
topics' weights (gamma + n_dk^{-j}) * beta_kw and their sum, a block-wide prefix sum over those
sums gives the CDF in topic order, and the thread whose interval holds u * total walks its own
topics for the draw (the inverse CDF, as torch.searchsorted(right=True) over k = 0..K-1).

The prefix sum is a Hillis-Steele scan in shared memory (what numba's CUDA simulator can run:
shared arrays, syncthreads and atomics, no warp shuffles) or, on a real device only, a scan by
warp shuffles (``scan="warp"``; device-tested only: it cannot run in the simulator).

Randomness: Philox4x32-10 (Salmon et al. 2011, Random123's constants) computed in the kernel,
keyed by two 32-bit words drawn from the caller's torch.Generator, counter = (global token
index, sweep): no (sweeps, T) uniform array, and the uniforms depend neither on the launch
geometry nor on how the tokens are split over ranks (a shard passes its global token offset).
The draws are those of a sequential inverse CDF with these uniforms at any block size, up to
rounding exactly at an interval's end (tests/lda/gibbs/test_dense_cuda.py checks them draw for
draw).

The kept sweeps' indicators (or Rao-Blackwellised conditionals) are summed on the device into
the (W, K) word-topic sums (atomics: documents share words) and the (n, K) document-topic sums
(one block owns a document: a shared accumulator written once), never into a (T, K) array.
Torch CUDA tensors go in and come out through ``__cuda_array_interface__`` on torch's current
stream; CPU tensors run under the simulator (NUMBA_ENABLE_CUDASIM=1) or on a device if present.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Literal

import numpy as np
import torch
from numba import cuda as numba_cuda
from numba import float64, int64
from numba.core import config

from lda.gamma import Gamma, gamma_vector

# Kernel code is typed by numba, not mypy (numba's stubs make cuda.threadIdx.x a method). The
# object is the module itself: the simulator swaps globals that are numba.cuda for its own.
cuda: Any = numba_cuda

Scan = Literal["auto", "shared", "warp"]

# Philox4x32-10 constants (Random123): round multipliers and the Weyl key increments.
_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)
_W1 = np.uint64(0xBB67AE85)
_LO32 = np.uint64(0xFFFFFFFF)
_ZERO = np.uint64(0)
_S5 = np.uint64(5)
_S6 = np.uint64(6)
_S26 = np.uint64(26)
_S32 = np.uint64(32)
_TWO_M53 = 2.0**-53
_WARP = 32
_SHARED_BYTES = 48 * 1024  # the static per-block limit without opting in to more


def simulated() -> bool:
    """numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1 when numba was imported)."""
    return bool(getattr(config, "ENABLE_CUDASIM", 0))


@functools.cache
def available() -> bool:
    """A real CUDA device numba can compile for: a driver and NVVM (the simulator does not
    count; torch wheels bundle the CUDA runtime but not NVVM, so both are checked)."""
    if simulated():
        return False
    try:
        from numba.cuda.cudadrv import nvvm

        return bool(cuda.is_available()) and bool(nvvm.is_available())
    except Exception:  # a broken driver or toolkit install: not usable, whatever the cause
        return False


# ------------------------------------------------------------------------------------------
# Device functions


@cuda.jit(device=True)
def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of counter (c0..c3) under key (k0, k1): 32-bit words held in uint64, so
    32x32-bit products are exact (also in the simulator, which runs this as Python)."""
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = (p1 >> _S32) ^ c1 ^ k0, p1 & _LO32, (p0 >> _S32) ^ c3 ^ k1, p0 & _LO32
        k0 = (k0 + _W0) & _LO32
        k1 = (k1 + _W1) & _LO32
    return c0, c1, c2, c3


@cuda.jit(device=True)
def uniform(k0, k1, token, sweep):
    """U[0, 1) with 53 random bits for (global token index, sweep) under key (k0, k1)."""
    g = np.uint64(token)
    r0, r1, _, _ = philox4x32(g & _LO32, g >> _S32, np.uint64(sweep), _ZERO, k0, k1)
    return float(((r0 >> _S5) << _S26) | (r1 >> _S6)) * _TWO_M53


@cuda.jit(device=True)
def _scan_shared(value, t, threads, sums, scratch):
    """Block-wide inclusive prefix sum of ``value`` over the threads: (this thread's lower end,
    its upper end, the total). Hillis-Steele in shared memory, ping-ponging between the two
    halves of ``sums`` (2 * threads) so each round needs one barrier. lower is exactly the
    previous thread's upper (the draw's intervals tile [0, total) with no gap)."""
    if threads == 1:
        return 0.0, value, value
    sums[t] = value
    cuda.syncthreads()
    src = 0
    offset = 1
    while offset < threads:
        v = sums[src + t]
        if t >= offset:
            v += sums[src + t - offset]
        sums[threads - src + t] = v
        src = threads - src
        cuda.syncthreads()
        offset *= 2
    lower = 0.0
    if t > 0:
        lower = sums[src + t - 1]
    return lower, sums[src + t], sums[src + threads - 1]


@cuda.jit(device=True)
def _warp_inclusive(value, lane):
    """Inclusive prefix sum of ``value`` over the 32 lanes of a warp (Kogge-Stone by shuffles).
    DEVICE-TESTED ONLY."""
    offset = 1
    while offset < 32:
        up = cuda.shfl_up_sync(0xFFFFFFFF, value, offset)
        if lane >= offset:
            value += up
        offset *= 2
    return value


@cuda.jit(device=True)
def _scan_warp(value, t, threads, sums, scratch):
    """The same scan by warp shuffles: within each warp, then over the warps' totals.
    DEVICE-TESTED ONLY (the simulator has no shuffles). ``threads`` a multiple of 32; one
    warp (the default up to K = 64) needs no barrier at all."""
    lane = t & 31
    warp = t >> 5
    v = _warp_inclusive(value, lane)
    if threads == 32:
        lower = cuda.shfl_up_sync(0xFFFFFFFF, v, 1)
        if lane == 0:
            lower = 0.0
        return lower, v, cuda.shfl_sync(0xFFFFFFFF, v, 31)
    if lane == 31:
        scratch[warp] = v
    cuda.syncthreads()
    if warp == 0:
        warps = threads >> 5
        x = 0.0
        if lane < warps:
            x = scratch[lane]
        x = _warp_inclusive(x, lane)
        if lane < warps:
            scratch[lane] = x
    cuda.syncthreads()
    if warp > 0:
        v += scratch[warp - 1]
    sums[t] = v
    cuda.syncthreads()
    lower = 0.0
    if t > 0:
        lower = sums[t - 1]
    return lower, v, sums[threads - 1]


# ------------------------------------------------------------------------------------------
# The kernel (one body, two scans)


def _build(scan: Any, max_registers: int | None = None) -> Any:
    """The Gibbs kernel with ``scan`` as its prefix sum (the rest is shared by both), limited
    to ``max_registers`` per thread if given (benchmarks/ptx_report.py reports the registers
    it uses without a cap)."""
    options = {} if max_registers is None else {"max_registers": max_registers}

    @cuda.jit(**options)
    def gibbs(
        words,  # (T,) int64
        offsets,  # (n+1,) int64
        order,  # (n,) int64: the documents, longest first
        beta_t,  # (W, K) float64
        gamma,  # (K,) float64 gamma_k
        z,  # (T,) int64 initial assignments, updated in place
        key,  # (2,) int64: the Philox key's two 32-bit words
        base,  # int: global index of token 0 (a shard's start)
        sweeps,  # int
        burn_in,  # int
        rao_blackwell,  # bool: sum conditionals instead of indicators
        word_sums,  # bool: accumulate word_topic (the held-out scorer needs only documents)
        word_topic,  # (W, K) float64 zeros: kept-sweep sums by word
        document_topic,  # (n, K) float64 zeros: kept-sweep sums by document
    ):
        t = cuda.threadIdx.x
        threads = cuda.blockDim.x
        n_topics = beta_t.shape[1]
        # Thread t owns topics [lo, hi): their weights, counts and sums are its alone, so only
        # the scan and the draw need barriers. (No min(): numba's CUDA target resolves it to
        # the iterable overload.)
        chunk = (n_topics + threads - 1) // threads
        lo = t * chunk
        if lo > n_topics:
            lo = n_topics
        hi = lo + chunk
        if hi > n_topics:
            hi = n_topics
        dyn = cuda.shared.array(0, dtype=float64)
        counts = dyn[0:n_topics]
        weights = dyn[n_topics : 2 * n_topics]
        acc = dyn[2 * n_topics : 3 * n_topics]
        sums = dyn[3 * n_topics : 3 * n_topics + 2 * threads]
        end_f = 3 * n_topics + 2 * threads + _WARP
        scratch = dyn[3 * n_topics + 2 * threads : end_f]
        # The drawn topic, by atomic min over the claiming threads: three int64 slots after the
        # floats, in rotation (a slot is reset one token before its use, after every thread has
        # read its last value). Dynamic shared memory only: the simulator allocates a static
        # shared array on each thread's first call, and two threads can race to make their own.
        choice = cuda.shared.array(0, dtype=int64)[end_f : end_f + 3]
        k0 = np.uint64(key[0])
        k1 = np.uint64(key[1])
        for b in range(cuda.blockIdx.x, order.shape[0], cuda.gridDim.x):
            d = order[b]
            start = offsets[d]
            end = offsets[d + 1]
            for k in range(t, n_topics, threads):
                counts[k] = 0.0
                acc[k] = 0.0
            if t == 0:
                choice[0] = n_topics  # slots 1 and 2 are reset before their first use
            cuda.syncthreads()
            for j in range(start + t, end, threads):
                cuda.atomic.add(counts, z[j], 1.0)
            cuda.syncthreads()
            slot = 0
            k_new = n_topics
            for s in range(sweeps):
                keep = s >= burn_in
                for j in range(start, end):
                    w = words[j]
                    k_old = z[j]
                    if end - start == 1 and s > 0:
                        # Thread 0 wrote z[j] after the last barrier: a one-token document
                        # would read it again before the next one, so use the value in hand.
                        k_old = k_new
                    local = 0.0
                    for k in range(lo, hi):
                        c = counts[k]
                        if k == k_old:
                            c -= 1.0  # n_dk^{-j}: the token's own assignment left out
                        weight = (gamma[k] + c) * beta_t[w, k]
                        weights[k] = weight
                        local += weight
                    lower, upper, total = scan(local, t, threads, sums, scratch)
                    if t == 0:
                        choice[(slot + 1) % 3] = n_topics
                    u = uniform(k0, k1, base + j, s) * total
                    # u < total (U < 1) and the intervals tile [0, total): one thread holds u
                    # and walks its topics (first running sum > u, zero weights never drawn).
                    if lower <= u and u < upper:
                        running = lower
                        pick = -1
                        for k in range(lo, hi):
                            if weights[k] > 0.0:
                                pick = k
                                running += weights[k]
                                if running > u:
                                    break
                        if pick >= 0:
                            cuda.atomic.min(choice, slot, pick)
                    cuda.syncthreads()
                    k_new = choice[slot]
                    if k_new == n_topics:  # every weight 0 (or NaN): nothing to draw from
                        k_new = k_old
                    if keep:
                        if rao_blackwell:
                            for k in range(lo, hi):
                                p = weights[k] / total
                                acc[k] += p
                                if word_sums:
                                    cuda.atomic.add(word_topic, (w, k), p)
                        elif lo <= k_new and k_new < hi:
                            acc[k_new] += 1.0
                            if word_sums:
                                cuda.atomic.add(word_topic, (w, k_new), 1.0)
                    if k_new != k_old:
                        if lo <= k_old and k_old < hi:
                            counts[k_old] -= 1.0
                        if lo <= k_new and k_new < hi:
                            counts[k_new] += 1.0
                    if t == 0:
                        z[j] = k_new
                    slot = (slot + 1) % 3
            for k in range(lo, hi):  # the owner: no barrier since its last update
                document_topic[d, k] = acc[k]
            cuda.syncthreads()

    return gibbs


def kernel_signature() -> tuple[Any, ...]:
    """The numba argument types the Gibbs kernel is compiled for from torch tensors (to compile
    it ahead of a launch: PTX in the tests, the resource report in benchmarks/ptx_report.py)."""
    from numba import types

    i64, f64 = types.int64[::1], types.float64[:, ::1]
    return (
        i64, i64, i64, f64, types.float64[::1], i64, i64, types.int64, types.int64, types.int64,
        types.boolean, types.boolean, f64, f64,
    )  # fmt: skip


@functools.cache
def _kernel(scan: str, max_registers: int | None = None) -> Any:
    """The Gibbs kernel with the named scan, built once per process (numba compiles it on the
    first launch for each argument-type signature)."""
    return _build(_scan_warp if scan == "warp" else _scan_shared, max_registers)


@cuda.jit
def _uniforms_kernel(key, base, out):
    """out[s, j] = the uniform the Gibbs kernel draws for token base + j in sweep s."""
    j = cuda.grid(1)
    if j < out.shape[1]:
        k0 = np.uint64(key[0])
        k1 = np.uint64(key[1])
        for s in range(out.shape[0]):
            out[s, j] = uniform(k0, k1, base + j, s)


# ------------------------------------------------------------------------------------------
# Host side


def default_threads(n_topics: int) -> int:
    """Threads per block: on a device a multiple of 32 (the warp scan needs whole warps), ~2
    topics per thread, at most 256; in the simulator 2 (each thread is a Python thread: two
    exercise the scan and the hand-off between threads at the least cost; the draws do not
    depend on the geometry)."""
    if simulated():
        return 2
    return min(256, _WARP * max(1, math.ceil(n_topics / (2 * _WARP))))


def shared_bytes(n_topics: int, threads: int) -> int:
    """Dynamic shared memory of one block: counts, weights, accumulator, scan, warp totals
    (float64) and the draw's three int64 slots."""
    return 8 * (3 * n_topics + 2 * threads + _WARP + 3)


def collapsed_gibbs_cuda(
    beta: torch.Tensor,
    words: torch.Tensor,
    offsets: torch.Tensor,
    gamma: Gamma,
    z: torch.Tensor,
    key: torch.Tensor,
    token_base: int,
    sweeps: int,
    burn_in: int,
    rao_blackwell: bool,
    word_sums: bool = True,
    threads: int | None = None,
    scan: Scan = "auto",
    max_registers: int | None = None,
) -> tuple[torch.Tensor | None, torch.Tensor]:
    """Run every sweep of every document in one launch; return the kept sweeps' summed
    ((K, W) topic-word or None without ``word_sums``, (n, K) document-topic) float64 counts
    (not yet divided by the kept sweeps) on ``beta``'s device. ``z`` (T,) is the start (not
    modified), ``key`` two int64 in [0, 2^32), ``token_base`` the global index of token 0."""
    if not simulated() and not available():
        raise RuntimeError(
            "the CUDA Gibbs kernel needs a CUDA device that numba can compile for (driver and "
            "NVVM), or numba's simulator (NUMBA_ENABLE_CUDASIM=1) for CPU tensors"
        )
    n_topics, n_words = beta.shape
    n_docs = int(offsets.numel()) - 1
    threads = threads or default_threads(n_topics)
    if scan == "auto":
        scan = "shared" if simulated() else "warp"
    if scan == "warp" and (simulated() or threads % _WARP):
        raise ValueError("the warp-shuffle scan needs a real device and whole warps of threads")
    if max_registers is not None and simulated():
        raise ValueError("max_registers limits a real device's registers: not in the simulator")
    if not 1 <= threads <= 1024:
        raise ValueError(f"threads per block must be in [1, 1024], got {threads}")
    shared = shared_bytes(n_topics, threads)
    if shared > _SHARED_BYTES:
        raise ValueError(f"K = {n_topics} needs {shared} bytes of shared memory per block")
    device = beta.device
    run = torch.device("cpu") if simulated() else _cuda_device(device)
    beta_t = beta.detach().to(run, torch.float64).T.contiguous()
    words_r = words.to(run, torch.int64).contiguous()
    offsets_r = offsets.to(run, torch.int64).contiguous()
    # Longest documents first: blocks start roughly in index order, and a document's sweeps are
    # sequential, so a long one started last would run on alone after the rest are done.
    order = torch.argsort(offsets_r[1:] - offsets_r[:-1], descending=True, stable=True)
    z_r = z.to(run, torch.int64, copy=True).contiguous()
    key_r = key.to(run, torch.int64).contiguous()
    word_topic = torch.zeros(
        (n_words, n_topics) if word_sums else (1, n_topics), dtype=torch.float64, device=run
    )
    document_topic = torch.zeros(n_docs, n_topics, dtype=torch.float64, device=run)
    gamma_r = torch.from_numpy(gamma_vector(gamma, n_topics)).to(run)
    args = (words_r, offsets_r, order, beta_t, gamma_r, z_r, key_r, word_topic, document_topic)
    if n_docs > 0 and words_r.numel() > 0:
        kernel = _kernel(scan, max_registers)
        scalars = (int(token_base), int(sweeps), int(burn_in))
        if simulated():
            w, o, r, b, g, zz, k, wt, dt = (a.numpy() for a in args)
            kernel[n_docs, threads, 0, shared](
                w, o, r, b, g, zz, k, *scalars, bool(rao_blackwell),
                bool(word_sums), wt, dt,
            )  # fmt: skip
        else:
            with cuda.gpus[run.index]:
                stream = cuda.external_stream(torch.cuda.current_stream(run).cuda_stream)
                # sync=False: the launch is on torch's current stream, which orders it after
                # the tensors' producers; a stream sync per array would stall the host.
                w, o, r, b, g, zz, k, wt, dt = (cuda.as_cuda_array(a, sync=False) for a in args)
                kernel[n_docs, threads, stream, shared](
                    w, o, r, b, g, zz, k, *scalars, bool(rao_blackwell),
                    bool(word_sums), wt, dt,
                )  # fmt: skip
    topic_word = word_topic.T.to(device) if word_sums else None
    return topic_word, document_topic.to(device)


def philox_uniforms(key: tuple[int, int], sweeps: int, n_tokens: int, base: int = 0) -> np.ndarray:
    """(sweeps, n_tokens) the uniforms the kernel draws for tokens base.. under ``key`` (runs on
    the device or the simulator; for tests and inspection)."""
    key_np = np.array(key, dtype=np.int64)
    out = np.zeros((sweeps, n_tokens), dtype=np.float64)
    if n_tokens:
        threads = min(n_tokens, 128)
        blocks = (n_tokens + threads - 1) // threads
        _uniforms_kernel[blocks, threads](key_np, int(base), out)
    return out


def _cuda_device(device: torch.device) -> torch.device:
    """The CUDA device to run on: ``device`` itself, or the current one for a CPU tensor."""
    if device.type == "cuda" and device.index is not None:
        return device
    return torch.device("cuda", torch.cuda.current_device())
