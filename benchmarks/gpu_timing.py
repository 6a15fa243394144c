"""The GPU check's timed parts: the dense and sparse Gibbs kernels, CUDA against the CPU's, and
the shipped learner on the device against the CPU (docs/s and served perplexity, scored as the
learner benchmark scores)."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator
from typing import Any

from benchmarks.common import minibatches, read_corpus, stream_vocabulary, synchronize
from benchmarks.gpu_context import Context, LearnerCell


def vocabulary(ctx: Context, size: int) -> Any:
    """The data's ``vocab-<size>.txt`` (7,702, and 100,000 from the bundle), else ``size``
    words counted over the first texts of the data, as the service builds one."""
    from lda.vocab import Vocabulary

    path = ctx.data / f"vocab-{size}.txt"
    if path.is_file():
        return Vocabulary.load(path)
    print(f"no {path}: counting {size} words over {ctx.sizes.vocab_docs} texts", flush=True)
    return stream_vocabulary(ctx.data, size, ctx.sizes.vocab_docs)


def _device(ctx: Context) -> Any:
    """Where the device side runs: the GPU, or the CPU under the simulator in a dry run."""
    import torch

    return torch.device("cpu" if ctx.dry_run else "cuda")


def _peak_mib(device: Any) -> float | None:
    import torch

    if device.type != "cuda":
        return None
    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)


def _reset_peak(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def part_kernels(ctx: Context) -> None:
    """ns per token-sweep of the dense and sparse kernels, CPU and CUDA, on DEV minibatches at
    each K and W: one learner step's Gibbs call (the shipped sampler's sweeps and method) and
    its topic-word sums, beta from a short SGRLD warm-up on the CPU."""
    from dataclasses import replace

    import numba
    import torch

    from lda.batch import Batch
    from lda.gibbs import GibbsConfig
    from lda.model import LearnerConfig, StreamingLDA

    sizes = ctx.sizes
    device = _device(ctx)
    shipped = _shipped_sampler()
    print(f"numba threads {numba.get_num_threads()}, torch threads {torch.get_num_threads()}")
    for n_words in sizes.words:
        vocab = vocabulary(ctx, n_words)
        n_cpu = sizes.batch * sizes.cpu_batches
        n_dev = sizes.batch * sizes.device_batches
        need = sizes.warm_docs + n_cpu + n_dev + sizes.big_batch
        corpus = read_corpus(ctx.data, vocab, 0, need, sizes.max_tokens)
        docs = corpus.train
        warm, rest = docs[: sizes.warm_docs], docs[sizes.warm_docs :]
        cpu_batches = [Batch.from_ids(g) for g in minibatches(rest[:n_cpu], sizes.batch)]
        rest = rest[n_cpu:]
        groups = minibatches(rest[:n_dev], sizes.batch)
        groups.append(rest[n_dev : n_dev + sizes.big_batch])
        dev_batches = [Batch.from_ids(g) for g in groups if g]
        for n_topics in sizes.topics:
            if ctx.left() < 5:
                ctx.emit("skipped", what=f"kernels at W={len(vocab)} K={n_topics}: out of time")
                continue
            model = StreamingLDA(LearnerConfig(n_topics, len(vocab), sampler="sgrld"), seed=0)
            for group in minibatches(warm, sizes.batch):
                model.update(Batch.from_ids(group))
            beta_cpu = model.beta.contiguous()
            beta_dev = beta_cpu.to(device)
            step = GibbsConfig.from_learner(LearnerConfig(n_topics, len(vocab), sampler=shipped))
            cell = {"topics": n_topics, "words": len(vocab), "method": step.method}
            cell["sweeps"] = step.sweeps
            for kernel in ("dense", "sparse"):
                on_cpu = replace(step, backend="cpu", kernel=kernel)
                seconds = _time_calls(beta_cpu, cpu_batches, on_cpu, len(vocab))
                _emit_kernel(ctx, cell, kernel, "cpu", cpu_batches, seconds, None)
                on_dev = replace(step, backend="cuda", kernel=kernel)
                dev_n = [b for b in dev_batches if b.n_documents == sizes.batch]
                big = [b for b in dev_batches if b.n_documents != sizes.batch]
                for batches in (dev_n, big):
                    if not batches:
                        continue
                    what = f"{kernel} CUDA kernel at W={len(vocab)} K={n_topics}"
                    with ctx.attempt(what):
                        moved = [Batch(b.words.to(device), b.offsets) for b in batches]
                        _reset_peak(device)
                        seconds = _time_calls(beta_dev, moved, on_dev, len(vocab))
                        peak = _peak_mib(device)
                        _emit_kernel(ctx, cell, kernel, "cuda", batches, seconds, peak)
            del beta_dev, model
    ctx.raise_errors()


def _shipped_sampler() -> str:
    """The service's shipped sampler (its settings' default)."""
    from service.settings_learning import ModelSettings

    return str(ModelSettings.model_fields["sampler"].default)


def _time_calls(beta: Any, batches: list[Any], config: Any, n_words: int) -> list[float]:
    """Seconds per token-sweep of each call (one untimed call first: compilation, caches),
    every minibatch once, or twice when there is one."""
    import torch

    from lda.gibbs import gibbs_expectations

    def call(batch: Any, seed: int) -> float:
        generator = torch.Generator(device=beta.device).manual_seed(seed)
        synchronize(beta.device)
        start = time.perf_counter()
        gibbs_expectations(beta, batch, config, generator).topic_word(n_words)
        synchronize(beta.device)
        return (time.perf_counter() - start) / (config.sweeps * max(batch.n_tokens, 1))

    call(batches[0], 0)
    rounds = batches * 2 if len(batches) == 1 else batches
    return [call(batch, i + 1) for i, batch in enumerate(rounds)]


def _emit_kernel(
    ctx: Context,
    cell: dict[str, Any],
    kernel: str,
    backend: str,
    batches: list[Any],
    seconds: list[float],
    peak: float | None,
) -> None:
    tokens = statistics.mean(b.n_tokens for b in batches)
    per = statistics.median(seconds)
    ctx.emit(
        "kernel",
        **cell,
        kernel=kernel,
        backend=backend,
        docs=batches[0].n_documents,
        tokens=round(tokens),
        calls=len(seconds),
        ns_per_token_sweep=round(1e9 * per, 2),
        ms_per_minibatch=round(1e3 * per * cell["sweeps"] * tokens, 3),
        peak_mib=peak,
    )


def part_learner(ctx: Context) -> None:
    """The shipped learner (benchmarks/learner.py's runs, scorer and estimator) on the device
    and on the CPU: docs/s and the served perplexity; the CPU learns fewer documents, and the
    device's run is also scored where the CPU's stops, so the two compare at one count."""
    from benchmarks.scorer import Scorer
    from lda.evaluation.perplexity import HeldoutSet

    sizes = ctx.sizes
    words = sorted({cell.words for cell in sizes.learner})
    for n_words in words:
        vocab = vocabulary(ctx, n_words)
        cells = [cell for cell in sizes.learner if cell.words == n_words]
        most = max(max(c.device_docs, c.cpu_docs) for c in cells)
        corpus = read_corpus(ctx.data, vocab, sizes.heldout, most, sizes.max_tokens)
        heldout = HeldoutSet.from_documents(corpus.heldout)
        scorer = Scorer(heldout, 0.01, sizes.eval_sweeps, "exact", 0)
        for cell in cells:
            for on in ("device", "cpu"):
                if ctx.left() < 10:
                    ctx.emit("skipped", what=f"learner K={cell.topics} on {on}: out of time")
                    continue
                with ctx.attempt(f"learner K={cell.topics} on {on}"):
                    _learn(ctx, cell, on, corpus.train, vocab, scorer)
    ctx.raise_errors()


def _learn(
    ctx: Context,
    cell: LearnerCell,
    on: str,
    train: list[list[int]],
    vocab: Any,
    scorer: Any,
) -> None:
    """One run: learn until its documents or its wall budget, scoring the served beta_mean at
    the CPU's count and at the end."""
    from benchmarks import learner
    from benchmarks.streamlda_runs import make_config, parse_run_spec
    from lda.batch import Batch
    from lda.model import StreamingLDA, resolve_device
    from service.learn.session import LearningSession
    from service.settings import Settings

    sizes = ctx.sizes
    device = resolve_device("cpu") if on == "cpu" else _device(ctx)
    spec_text = f"scir:device={device}"
    if on == "device":  # the CUDA kernels, loudly: never a silent fall back to the CPU's
        spec_text += ":gibbs_backend=cuda"
    args = learner.parse_args(
        [
            "--corpus-dir", str(ctx.data), "--topics", str(cell.topics), "--dtype", cell.dtype,
            "--streamlda-batch-size", str(sizes.batch), "--runs", "scir",
            "--no-gensim", "--no-sklearn", "--no-tomotopy",
        ]
    )  # fmt: skip
    spec = parse_run_spec(spec_text)
    config = make_config(args, spec, len(vocab))
    docs_target = cell.device_docs if on == "device" else cell.cpu_docs
    budget = cell.device_budget_s if on == "device" else cell.cpu_budget_s
    marks = sorted({min(cell.cpu_docs, docs_target), docs_target})
    groups = minibatches(train[:docs_target], sizes.batch)
    batches = [Batch.from_ids(g) for g in groups]
    start = time.perf_counter()
    warm = Batch(batches[0].words.to(device), batches[0].offsets)
    StreamingLDA(config, device, seed=999).update(warm)  # compile, warm caches
    synchronize(device)
    warmup_s = time.perf_counter() - start
    _reset_peak(device)
    # the shipped defaults (not STREAMLDA_*) at the cell's fixed K
    shipped = Settings.model_construct().model.model_copy(update={"fixed_topics": True})
    session: LearningSession[None] = LearningSession(shipped, device)
    model = session.begin(vocab, StreamingLDA(config, device, seed=0))
    ends = time.monotonic() + min(budget, max(1.0, ctx.left() - 15))
    docs = tokens = 0
    train_s = 0.0
    points: list[dict[str, Any]] = []
    stopped = False
    used: dict[str, int] = {}
    for index, host in enumerate(batches):
        batch = Batch(host.words.to(device), host.offsets)
        synchronize(device)
        begin = time.perf_counter()
        with _runners_counted(used):
            session.learn(batch)
        synchronize(device)
        train_s += time.perf_counter() - begin
        docs += batch.n_documents
        tokens += batch.n_tokens
        last = index == len(batches) - 1
        stopped = not last and time.monotonic() > ends
        if (docs in marks and docs not in [p["docs"] for p in points]) or last or stopped:
            beta_mean = model.beta_mean.detach().to("cpu")
            mark = marks.index(docs) if docs in marks else len(marks)
            perplexity, _ = scorer.score_common(f"{on}-{cell.topics}", beta_mean, mark)
            points.append({"docs": docs, "perplexity": round(float(perplexity), 2)})
        if stopped:
            break
    ctx.emit(
        "learner",
        topics=cell.topics,
        words=len(vocab),
        dtype=cell.dtype,
        device=str(device),
        gibbs=used,
        docs=docs,
        tokens=tokens,
        train_s=round(train_s, 3),
        docs_per_s=round(docs / train_s, 2) if train_s > 0 else None,
        tokens_per_s=round(tokens / train_s, 1) if train_s > 0 else None,
        warmup_s=round(warmup_s, 2),
        perplexity=points[-1]["perplexity"],
        checkpoints=points,
        peak_mib=_peak_mib(device),
        stopped_early=stopped,
        budget_s=budget,
    )


@contextlib.contextmanager
def _runners_counted(used: dict[str, int]) -> Iterator[None]:
    """Count which Gibbs runner each call inside picks (the chain may hand Gibbs a slice of
    beta's columns, so the runner is only known at the call)."""
    from lda.gibbs import expectations

    original = expectations.pick_implementation

    def picked(beta: Any, config: Any) -> Any:
        name = original(beta, config)
        used[name] = used.get(name, 0) + 1
        return name

    expectations.pick_implementation = picked
    try:
        yield
    finally:
        expectations.pick_implementation = original
