"""The learner benchmark's streamlda runs: a run spec (``sampler[:field=value]...``) parsed into
the LearnerConfig the service builds, and one run learned through the service's learning session
(revisits as the worker takes them), only the learner's steps timed."""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import torch

from benchmarks.common import synchronize
from benchmarks.scorer import Run, Scorer, point_of, progress
from lda.batch import Batch
from lda.model import (
    LearnerConfig,
    NonFiniteError,
    StreamingLDA,
    resolve_device,
    revisit_step_scale,
)
from lda.sgmcmc.samplers import SAMPLERS
from lda.sgmcmc.schedules import StepSchedule
from lda.vocab import Vocabulary
from service.learn.reservoir import Reservoir
from service.learn.session import LearningSession
from service.settings import Settings
from service.settings_learning import ModelSettings, WorkerSettings


@dataclass(frozen=True)
class RunSpec:
    """One streamlda run: its sampler and the LearnerConfig fields it sets; named by its spec."""

    name: str
    sampler: str
    overrides: dict[str, Any]
    batch_size: int | None = None  # documents per minibatch; None: --streamlda-batch-size
    device: str | None = (
        None  # auto, cpu or cuda (":" splits specs: --device cuda:1); None: --device
    )
    revisit: float = 0.0  # revisited documents per fresh one, as the worker at a live pace
    revisit_step: float | None = None  # a revisit step's share of eps; None: the worker's
    revisit_batch: int | None = None  # documents per revisit minibatch; None: the fresh one's


_CONFIG_HINTS = get_type_hints(LearnerConfig)
_FIXED_FIELDS = {"n_words", "sampler", "extra"}  # set by the benchmark or the spec's head


def _config_value(key: str, text: str) -> Any:
    """A LearnerConfig field's value from its command-line text (``none`` for an unset one;
    ``schedule`` as a[/b[/c]], see :class:`StepSchedule`)."""
    if key not in _CONFIG_HINTS or key in _FIXED_FIELDS:
        settable = sorted(set(_CONFIG_HINTS) - _FIXED_FIELDS)
        raise ValueError(f"{key!r} is not a settable LearnerConfig field: choose from {settable}")
    hint = _CONFIG_HINTS[key]
    kinds = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
    if NoneType in kinds and text.lower() == "none":
        return None
    kind = next(t for t in kinds if t is not NoneType)
    if get_origin(kind) is Literal:
        if text not in get_args(kind):
            raise ValueError(f"{key} must be one of {get_args(kind)}, got {text!r}")
        return text
    if kind is bool:
        if text.lower() not in {"true", "false", "1", "0", "yes", "no"}:
            raise ValueError(f"{key} must be true or false, got {text!r}")
        return text.lower() in {"true", "1", "yes"}
    if kind is StepSchedule:
        parts = text.split("/")
        b = None if len(parts) < 2 or parts[1].lower() == "none" else float(parts[1])
        return StepSchedule(float(parts[0]), b, *(float(c) for c in parts[2:3]))
    if kind in (int, float, str):
        return kind(text)
    raise ValueError(f"{key} cannot be set from the command line")


def parse_run_spec(spec: str) -> RunSpec:
    """``sampler[:field=value]...``, e.g. ``sgrld:sweeps=10:gibbs=rao-blackwell``."""
    sampler, *options = spec.strip().split(":")
    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r} in {spec!r}: choose from {sorted(SAMPLERS)}")
    overrides: dict[str, Any] = {}
    batch_size: int | None = None
    device: str | None = None
    revisit: dict[str, float] = {}
    for option in options:
        key, sep, text = option.partition("=")
        if not sep or not text:
            raise ValueError(f"option {option!r} of {spec!r} is not field=value")
        if key.strip() == "batch_size":  # the stream's minibatch, not a LearnerConfig field
            batch_size = int(text)
            if batch_size < 1:
                raise ValueError(f"batch_size must be positive in {spec!r}")
            continue
        if key.strip() == "device":  # where the learner runs, not a LearnerConfig field
            device = text.strip()
            torch.device("cpu" if device == "auto" else device)  # a malformed name fails here
            continue
        # The worker's revisits, not LearnerConfig fields.
        if key.strip() in ("revisit", "revisit_step", "revisit_batch"):
            revisit[key.strip()] = float(text)
            if revisit[key.strip()] < 0:
                raise ValueError(f"{key.strip()} must not be negative in {spec!r}")
            continue
        overrides[key.strip()] = _config_value(key.strip(), text.strip())
    return RunSpec(
        spec.strip(),
        sampler,
        overrides,
        batch_size,
        device,
        revisit.get("revisit", 0.0),
        revisit.get("revisit_step"),
        int(revisit["revisit_batch"]) if "revisit_batch" in revisit else None,
    )


def make_config(args: argparse.Namespace, spec: RunSpec, n_words: int) -> LearnerConfig:
    """The run's LearnerConfig as the service builds it from its settings (the command line's
    here; ``--step-size`` is a constant eps), then the spec's fields."""
    constant = args.step_size is not None
    settings = ModelSettings.model_construct(  # the command line's values only, not STREAMLDA_*
        sampler=spec.sampler,
        topics=args.topics,
        corpus_size=args.corpus_size,
        corpus_growth=args.corpus_growth,
        alpha=args.alpha,
        step_size=args.step_size,
        step_c=0.0 if constant else None,
        friction=args.friction,
        sweeps=args.sweeps,
        gibbs=args.gibbs,
        batch_size=spec.batch_size or args.streamlda_batch_size,  # SGRLD's defaults follow it
    )
    return settings.learner_config(n_words, **{"dtype": args.dtype, **spec.overrides})


def run_streamlda(
    spec: RunSpec,
    args: argparse.Namespace,
    batches: list[Batch],
    checkpoints: list[int],
    vocabulary: Vocabulary,
    scorer: Scorer,
    observe: Callable[[StreamingLDA, int], None] | None = None,
) -> Run:
    """Train one StreamingLDA run, timing only ``update``; score beta and beta_mean.
    ``observe(model, docs)``, untimed, sees the learner before its first step (docs 0) and after
    each fresh minibatch and its scoring: to read it, or to change its prior mid-stream."""
    config = make_config(args, spec, len(vocabulary))
    assert config.gamma is not None
    device = resolve_device(spec.device or args.device)
    name = spec.name if device.type == "cpu" or spec.device else f"{spec.name}@{device}"
    run = Run(name=name, settings=config.to_dict(), sweeps=config.sweeps, device=str(device))
    run.settings["batch_size"] = batches[0].n_documents
    start = time.perf_counter()
    warm = Batch(batches[0].words.to(device), batches[0].offsets)
    StreamingLDA(config, device, seed=args.seed + 999).update(warm)  # compile, warm caches
    synchronize(device)
    run.warmup_s = time.perf_counter() - start
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    # The service's learning session: its learn() is the step the worker and train take.
    # K fixed: the run's learner holds config's K, every slot live (topics move only in
    # benchmarks.topic_shapes and topic_moves_live)
    fixed = Settings.model_construct().model.model_copy(update={"fixed_topics": True})
    session: LearningSession[None] = LearningSession(fixed, device)
    model = session.begin(vocabulary, StreamingLDA(config, device, seed=args.seed))
    docs, tokens, index, train_s = 0, 0, 0, 0.0
    if observe is not None:
        observe(model, docs)
    # The worker at a live pace: after each fresh minibatch, revisits from a reservoir of the
    # documents learned until spec.revisit per fresh one (service/learn/worker.py).
    held = Reservoir(
        None, "revisits", WorkerSettings.model_fields["reservoir_size"].default, args.seed
    )
    scale = revisit_step_scale(spec.revisit) if spec.revisit_step is None else spec.revisit_step
    if spec.revisit:
        run.settings.update(revisit=spec.revisit, revisit_step=scale)
    for host_batch in batches:
        # The worker builds each minibatch on the learner's device before learning it
        # (session.take): one at a time, outside the learner's time and its peak memory's count.
        batch = Batch(host_batch.words.to(device), host_batch.offsets)
        synchronize(device)
        start = time.perf_counter()
        try:
            session.learn(batch)
            synchronize(device)  # a GPU's queued work is the learner's time too
        except NonFiniteError as exc:
            run.error = f"{exc} after {docs} documents"
            print(f"  {name}: {run.error}", file=sys.stderr)
            return run
        train_s += time.perf_counter() - start
        docs += batch.n_documents
        tokens += batch.n_tokens
        if spec.revisit:
            offer(held, host_batch)
            start = time.perf_counter()
            while model.revisited_docs < spec.revisit * model.docs_seen:
                again = draw(held, spec.revisit_batch or batch.n_documents)
                again = Batch(again.words.to(device), again.offsets)
                session.learn(again, revisit=True, step_scale=scale)
            synchronize(device)
            train_s += time.perf_counter() - start
        if device.type == "cuda":
            run.gpu_peak_mib = torch.cuda.max_memory_allocated(device) / 2**20
        if index < len(checkpoints) and docs >= checkpoints[index]:
            start = time.perf_counter()
            beta, beta_mean = model.beta.cpu(), model.beta_mean.cpu()
            scores = scorer.score(name, beta, config.gamma, index)
            mean, _ = scorer.score_common(f"{name} mean", beta_mean, index)
            point = point_of(docs, tokens, train_s, scores, time.perf_counter() - start)
            point.perplexity_mean = mean
            point.npmi = scorer.npmi(beta_mean)
            run.points.append(point)
            progress(name, point)
            index += 1
        if observe is not None:
            observe(model, docs)
    return run


def offer(reservoir: Reservoir, batch: Batch) -> None:
    """Offer each document of ``batch`` to the worker's reservoir, as its word ids in text."""
    words, offsets = batch.words.cpu().tolist(), batch.offsets.tolist()
    for start, end in itertools.pairwise(offsets):
        reservoir.offer(" ".join(map(str, words[start:end])))


def draw(reservoir: Reservoir, n: int) -> Batch:
    """One revisit minibatch of ``n`` held documents, drawn as the worker draws them."""
    return Batch.from_ids([[int(w) for w in text.split()] for text in reservoir.draw(n)])
