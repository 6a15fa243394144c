"""Tokens/s of the CUDA Gibbs kernel against the CPU kernel on DEV minibatches.

Trains SGRLD on the first ``--warm`` DEV documents on the CPU (so beta looks like a learned
one), then times collapsed Gibbs (``--sweeps``, half burn-in, ``--method``) on the next
minibatches of ``--sizes`` documents, each size its own documents: ``gibbs_expectations`` and
the (K, W) statistic the learner reads, with backend "cpu" (the numba CPU kernel, ``--threads``)
and backend "cuda" (beta and the words on ``--device``), best and mean of ``--rounds`` after a
warm-up call (compilation). Prints token-sweeps per second, ms per minibatch, the speed-up and
peak GPU memory (torch.cuda.max_memory_allocated) per size; ``--variants`` also times the raw
kernel with each scan and block size, and with each ``--register-caps`` limit (ptxas reports
152-158 registers per thread; a cap of 128 doubles nothing but allows 16 one-warp blocks per SM
instead of 12: benchmarks/ptx_report.py). Needs a CUDA device: the simulator is for tests only.

    .venv/bin/python -m benchmarks.gpu_gibbs --device cuda
    .venv/bin/python -m benchmarks.gpu_gibbs --device cuda:0 --method rao-blackwell --sweeps 6
    .venv/bin/python -m benchmarks.gpu_gibbs --topics 1000 --kernel sparse --method rao-blackwell
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numba
import torch

from benchmarks.common import CORPORA, minibatches, read_corpus
from lda.batch import Batch
from lda.config import Method, default_burn_in
from lda.gibbs import GibbsConfig, gibbs_expectations
from lda.model import LearnerConfig, StreamingLDA
from lda.vocab import Vocabulary


def require_cuda(device: str) -> torch.device:
    """The CUDA device to time on, or exit saying why there is none."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        raise SystemExit("error: NUMBA_ENABLE_CUDASIM=1: the simulator is for tests, not timing")
    if not torch.cuda.is_available():
        raise SystemExit(
            "error: no CUDA device: this benchmark times the CUDA Gibbs kernel on a GPU "
            "(tests/lda/gibbs/test_dense_cuda.py checks it under the simulator without one)"
        )
    from lda.gibbs.dense_cuda import available

    if not available():
        raise SystemExit(
            "error: numba cannot compile for this GPU (no NVVM found): install the project's "
            "cuda extra (pip install -e '.[cuda]': numba-cuda with NVVM) or set CUDA_HOME"
        )
    target = torch.device(device)
    if target.type != "cuda":
        raise SystemExit(f"error: --device must be a CUDA device, got {device}")
    return target


def timed(run: Callable[[], object], device: torch.device | None, rounds: int) -> list[float]:
    """Seconds of ``rounds`` calls of ``run`` after one untimed call (compilation, caches);
    on a GPU each call is bracketed by synchronisations."""

    def once() -> float:
        if device is not None:
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        run()
        if device is not None:
            torch.cuda.synchronize(device)
        return time.perf_counter() - start

    once()
    return [once() for _ in range(rounds)]


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="CUDA device of the GPU runs")
    p.add_argument("--corpus-dir", type=Path, default=None, help="default: the DEV corpora")
    p.add_argument("--sizes", default="50,500,5000", help="documents per minibatch")
    p.add_argument("--warm", type=int, default=2000, help="SGRLD training documents first")
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--sweeps", type=int, default=50)
    p.add_argument("--method", choices=["exact", "rao-blackwell"], default="exact")
    p.add_argument("--gamma", type=float, default=0.01)
    p.add_argument(
        "--kernel", choices=["dense", "sparse"], default="dense",
        help="the collapsed kernel on both sides: dense O(K) or sparse O(K_d) per token-sweep",
    )  # fmt: skip
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=numba.get_num_threads())
    p.add_argument("--variants", action="store_true", help="raw kernel: each scan, block size")
    p.add_argument(
        "--register-caps", default="128,96,64", help="--variants: registers per thread to try"
    )
    args = p.parse_args(argv)
    device = require_cuda(args.device)
    numba.set_num_threads(args.threads)
    corpus_dir = args.corpus_dir or CORPORA
    sizes = [int(s) for s in args.sizes.split(",")]
    vocab = Vocabulary.load(corpus_dir / "vocab-7702.txt")
    corpus = read_corpus(corpus_dir, vocab, 0, args.warm + sum(sizes))
    warm, rest = corpus.train[: args.warm], corpus.train[args.warm :]
    model = StreamingLDA(LearnerConfig(args.topics, len(vocab), sampler="sgrld"), seed=0)
    for group in minibatches(warm, 50):
        model.update(Batch.from_ids(group))
    beta_cpu = model.beta.contiguous()
    beta_gpu = beta_cpu.to(device)
    method: Method = args.method
    burn_in = default_burn_in(args.sweeps)
    print(
        f"{torch.cuda.get_device_name(device)}; CPU kernel on {args.threads} numba threads; "
        f"K = {args.topics}, W = {len(vocab)}, {args.sweeps} sweeps ({burn_in} burn-in), "
        f"{method}, {args.kernel} kernel; best (mean) of {args.rounds}"
    )
    print(
        f"{'docs':>6} {'tokens':>9} {'cpu ms':>16} {'gpu ms':>16} {'cpu Mtok-sw/s':>14} "
        f"{'gpu Mtok-sw/s':>14} {'speed-up':>9} {'peak GPU MiB':>13}"
    )
    n_words = len(vocab)
    on_cpu = GibbsConfig(args.gamma, args.sweeps, burn_in, method, "cpu", kernel=args.kernel)
    on_gpu = replace(on_cpu, backend="cuda")
    start = 0
    for size in sizes:
        docs, start = rest[start : start + size], start + size
        cpu_batch = Batch.from_ids(docs)
        gpu_batch = Batch(cpu_batch.words.to(device), cpu_batch.offsets)

        def cpu_run(batch: Batch = cpu_batch) -> object:
            g = torch.Generator().manual_seed(1)
            result = gibbs_expectations(beta_cpu, batch, on_cpu, g)
            return result.topic_word(n_words)

        def gpu_run(batch: Batch = gpu_batch) -> object:
            g = torch.Generator(device=device).manual_seed(1)
            result = gibbs_expectations(beta_gpu, batch, on_gpu, g)
            return result.topic_word(n_words)

        cpu = timed(cpu_run, None, args.rounds)
        torch.cuda.reset_peak_memory_stats(device)
        gpu = timed(gpu_run, device, args.rounds)
        peak = torch.cuda.max_memory_allocated(device) / 2**20
        work = cpu_batch.n_tokens * args.sweeps / 1e6
        print(
            f"{size:>6} {cpu_batch.n_tokens:>9} "
            f"{1e3 * min(cpu):>7.1f} ({1e3 * statistics.mean(cpu):>6.1f}) "
            f"{1e3 * min(gpu):>7.1f} ({1e3 * statistics.mean(gpu):>6.1f}) "
            f"{work / min(cpu):>14.1f} {work / min(gpu):>14.1f} {min(cpu) / min(gpu):>8.1f}x "
            f"{peak:>13.1f}"
        )
        if args.variants:
            variants(beta_gpu, gpu_batch, args, device, method, burn_in)


def variants(
    beta: torch.Tensor,
    batch: Batch,
    args: argparse.Namespace,
    device: torch.device,
    method: Method,
    burn_in: int,
) -> None:
    """The raw kernel (no start draw, no division) with each scan and block size, then the
    default block size under each register cap."""
    from lda.gibbs.dense_cuda import Scan, collapsed_gibbs_cuda, default_threads

    g = torch.Generator(device=device).manual_seed(2)
    z = torch.randint(beta.shape[0], (batch.n_tokens,), generator=g, device=device)
    key = torch.randint(0, 2**32, (2,), generator=g, device=device)
    work = batch.n_tokens * args.sweeps / 1e6
    scans: tuple[Scan, ...] = ("warp", "shared")
    caps = [int(c) for c in args.register_caps.split(",") if c.strip()]
    default = default_threads(beta.shape[0])
    settings = [(s, n, None) for s in scans for n in (32, 64, 128, 256)]
    settings += [(s, default, cap) for s in scans for cap in caps]
    for scan, threads, cap in settings:

        def run(scan: Scan = scan, threads: int = threads, cap: int | None = cap) -> object:
            return collapsed_gibbs_cuda(
                beta, batch.words, batch.offsets, args.gamma, z, key, 0, args.sweeps,
                burn_in, method == "rao-blackwell", threads=threads, scan=scan, max_registers=cap,
            )  # fmt: skip

        seconds = min(timed(run, device, args.rounds))
        limit = "" if cap is None else f", <= {cap} registers"
        print(
            f"       {scan:>6} scan, {threads:>3} threads{limit}: {1e3 * seconds:7.1f} ms, "
            f"{work / seconds:7.1f} Mtok-sw/s"
        )


if __name__ == "__main__":
    main()
