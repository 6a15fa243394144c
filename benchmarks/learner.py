"""Learner benchmark: streamlda's samplers against gensim, scikit-learn, tomotopy.

Reads ``<corpus-dir>/dev-*.jsonl.gz`` in place, tokenises with ``vocab-7702.txt``, keeps the first
H non-empty documents as the held-out set (never trained on) and the next D as training documents;
all encoding (minibatches, bags of words, CSR matrices) happens before any timing. Systems:

* streamlda: every ``--samplers`` entry, or the ``--runs`` specs (``sampler[:field=value]...``,
  any :class:`lda.model.LearnerConfig` field, plus ``batch_size`` and ``device``), each a
  :class:`StreamingLDA` learning from minibatches of n documents on ``--device`` (or the spec's
  ``device``: a GPU run and a CPU run can share one table); only ``model.update`` is timed (on a
  GPU up to a synchronisation; the minibatches are on the device before timing, as the worker
  has them). Both the current sample (``beta``) and the served estimate (``beta_mean``) are
  scored, on the CPU, by the one estimator; a GPU run reports its peak GPU memory.
* gensim: online VB ``LdaModel`` fed chunk by chunk through ``update(chunk)`` (timed).
* sklearn: online VB ``LatentDirichletAllocation`` (batch n, ``total_samples`` = D) fed one CSR
  minibatch per ``partial_fit`` (timed); beta = ``components_`` row-normalised.
* tomotopy: batch collapsed Gibbs ``LDAModel``, a model per checkpoint trained on the first 2k,
  5k, 10k documents for 50 and 200 iterations (``train`` calls timed; ``add_doc`` and the
  initialisation reported apart as prep); the last one is also scored every 10 iterations.

A spec's ``revisit=R`` runs it as the worker runs on a quiet stream: after each fresh minibatch,
revisit minibatches from the worker's reservoir until R revisited documents per fresh one, each
step a share of the stream's step (``revisit_step=S`` sets it; default the worker's rule,
``lda.model.revisit_step_scale``), each of ``revisit_batch=B`` documents (default the fresh
minibatch's). Their time counts as the learner's.

``--repeat`` cycles through the training documents when ``--docs`` asks for more than the
corpus holds (a stream that sees each article again; the DEV corpus has ~29,000).

At each checkpoint every model's K x W topic matrix is scored by the same document-completion
estimator (:mod:`lda.evaluation.perplexity`) on the same held-out set with the same random numbers
and the
same document prior gamma (``--eval-gamma``); ``ppl_own`` scores each model with its own prior.
Prints a detail table, a time-to-quality table (perplexity and learner seconds at each
checkpoint) and the speed and peer goals; ``--plot`` draws perplexity against learner seconds.

    .venv/bin/python benchmarks/learner.py --plot /tmp/learner.png   # the goals' configuration
    .venv/bin/python benchmarks/learner.py --quick        # ~1 minute smoke run
    .venv/bin/python benchmarks/learner.py --topics 200 --samplers sgrld,sgrhmc --no-gensim
    .venv/bin/python benchmarks/learner.py --no-gensim --no-sklearn --no-tomotopy \\
        --runs 'sgrld,sgrld:sweeps=10:gibbs=rao-blackwell,sgrhmc:mean_decay=0.9'
    .venv/bin/python benchmarks/learner.py --no-gensim --no-tomotopy --docs 100000 --repeat \\
        --checkpoints 10000,100000 --runs 'sgrld,sgrld:device=cuda,sgrld:device=cuda:batch_size=500'
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib.util
import itertools
import json
import logging
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType, NoneType, UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import mwparserfromhell
import numba
import torch

from lda.batch import Batch
from lda.config import Method, default_burn_in
from lda.evaluation.coherence import topic_quality
from lda.evaluation.perplexity import (
    HeldoutSet,
    PosteriorAverage,
    perplexity_from_probabilities,
    test_token_probabilities,
)
from lda.gibbs import GibbsConfig
from lda.model import (
    LearnerConfig,
    NonFiniteError,
    StreamingLDA,
    resolve_device,
    revisit_step_scale,
)
from lda.sgmcmc.samplers import SAMPLERS
from lda.sgmcmc.schedules import StepSchedule
from lda.vocab import Vocabulary, build_vocabulary
from service.learn.reservoir import Reservoir
from service.learn.session import LearningSession
from service.settings import Settings
from service.settings_learning import ModelSettings, WorkerSettings

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_CORPUS = REPO.parent / "shared" / "corpora"
PAPER_S_PER_100 = 0.73  # Ma, Chen & Fox (2015): 0.73-0.82 s per 100 documents
TARGET_S_PER_100 = 0.08  # the speed goal: at least 9x faster than the paper
TARGET_GENSIM_RATIO = 2.0  # the speed goal: at least 2x gensim's tokens per second
# the peer goal at K = 50: perplexity <= 0.95x scikit-learn's, tokens/s >= these multiples
TARGET_SKLEARN_PPL = 0.95
TARGET_SKLEARN_SPEED = {"sgrld": 2.0, "sgrhmc": 1.5}
REFERENCES = ("gensim", "sklearn")  # the peers whose tokens/s the detail table divides by


def _sibling(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, loaded by path: this script is run directly and loaded by path
    in the tests, so the benchmarks folder is not always importable."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


peers = _sibling("peers")


@dataclass
class Corpus:
    """Pre-encoded documents: held-out and training word ids, and what was skipped."""

    heldout: list[list[int]]
    train: list[list[int]]
    skipped_empty: int
    files: list[str]

    @property
    def train_tokens(self) -> int:
        return sum(len(d) for d in self.train)


@dataclass
class Point:
    """One checkpoint of one model."""

    docs: int
    tokens: int
    train_s: float
    s_per_100_docs: float
    tokens_per_s: float
    perplexity: float
    perplexity_avg: float
    perplexity_own: float
    perplexity_own_avg: float
    eval_s: float
    perplexity_mean: float | None = None  # streamlda's beta_mean (the served estimate)
    prep_s: float = 0.0  # tomotopy: add_doc and initialisation, not in train_s
    iterations: int | None = None  # tomotopy: Gibbs iterations behind this point
    npmi: float | None = None  # mean NPMI of the served estimate's top words (held-out documents)

    @property
    def served(self) -> float:
        """Perplexity of the estimate the system serves: beta_mean for streamlda, else beta."""
        return self.perplexity if self.perplexity_mean is None else self.perplexity_mean


@dataclass
class Run:
    """All checkpoints of one model, with its settings and warm-up time."""

    name: str
    settings: dict[str, Any]
    family: str = "streamlda"  # streamlda, gensim, sklearn or tomotopy
    sweeps: int | None = None  # passes over each training token (Gibbs sweeps or iterations)
    warmup_s: float = 0.0
    points: list[Point] = field(default_factory=list)
    curve: list[Point] = field(default_factory=list)  # tomotopy: the last model by iteration
    error: str | None = None
    device: str = "cpu"  # where the learner ran (the peers: the CPU)
    gpu_peak_mib: float | None = None  # a GPU run: torch's peak allocation (the kernel's too)


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


def read_texts(corpus_dir: Path) -> tuple[list[Path], Iterator[str]]:
    """The DEV files in order and their articles' plain texts (wikitext stripped), lazily."""
    files = sorted(corpus_dir.glob("dev-*.jsonl.gz"))
    if not files:
        raise SystemExit(f"error: no dev-*.jsonl.gz in {corpus_dir}")

    def texts() -> Iterator[str]:
        for path in files:
            with gzip.open(path, "rt", encoding="utf-8") as lines:
                for line in lines:
                    if not line.strip():
                        continue
                    record = json.loads(line)
                    text = record.get("text") or ""
                    if record.get("format") == "wikitext":
                        text = str(mwparserfromhell.parse(text).strip_code())
                    yield text

    return files, texts()


def stream_vocabulary(corpus_dir: Path, size: int, docs: int) -> Vocabulary:
    """The vocabulary the service builds from a stream: the ``size`` most frequent words of its
    first ``docs`` texts (held-out ones included, as the session counts them)."""
    _, texts = read_texts(corpus_dir)
    return build_vocabulary(itertools.islice(texts, docs), size)


def read_corpus(
    corpus_dir: Path,
    vocab: Vocabulary,
    n_heldout: int,
    n_train: int,
    limit: int | None = None,
    short_ok: bool = False,
) -> Corpus:
    """First ``n_heldout`` then ``n_train`` documents with in-vocabulary tokens, in file order
    (a warning if there are fewer, unless ``short_ok``: the caller repeats them)."""
    files, texts = read_texts(corpus_dir)
    heldout: list[list[int]] = []
    train: list[list[int]] = []
    skipped = 0
    used = [path.name for path in files]
    for text in texts:
        ids = vocab.encode(text)
        if limit is not None:
            ids = ids[:limit]
        if not ids:
            skipped += 1
            continue
        (heldout if len(heldout) < n_heldout else train).append(ids)
        if len(train) >= n_train:
            return Corpus(heldout, train, skipped, used)
    if not short_ok:
        print(
            f"warning: corpus ran out: {len(heldout)} held-out, {len(train)} training documents",
            file=sys.stderr,
        )
    return Corpus(heldout, train, skipped, used)


def repeated(documents: list[list[int]], n: int) -> list[list[int]]:
    """The first ``n`` documents of the stream that cycles through ``documents`` (the lists are
    shared, not copied)."""
    return [documents[i % len(documents)] for i in range(n)]


def minibatches(documents: list[list[int]], size: int) -> list[list[list[int]]]:
    """Consecutive groups of ``size`` documents (the last may be shorter)."""
    return [documents[i : i + size] for i in range(0, len(documents), size)]


def checkpoint_docs(requested: Sequence[int], n_docs: int, batch_size: int) -> list[int]:
    """Document counts where every system is scored: each requested count rounded up to whole
    minibatches (where the streaming learners can stop), capped at D, and D itself."""
    rounded = {min(n_docs, -(-c // batch_size) * batch_size) for c in requested if c > 0}
    return sorted(rounded | {n_docs})


def set_threads(n: int, torch_threads: int | None = None) -> int:
    """Torch and numba threads (numba is capped by its pool size); returns numba's count."""
    torch.set_num_threads(torch_threads or n)
    pool = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
    numba_threads = max(1, min(n, pool))
    numba.set_num_threads(numba_threads)
    peer_threads(n)
    return numba_threads


def peer_threads(n: int) -> contextlib.AbstractContextManager[object]:
    """Cap the BLAS and OpenMP pools of the libraries loaded *now* at ``n`` threads (as a
    context manager it restores them). Called again once a peer's libraries are imported."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=n)


class Scorer:
    """Scores any K x W topic matrix on the held-out set, with common random numbers: held-out
    perplexity, and the NPMI coherence of its top words counted in the held-out documents."""

    def __init__(
        self,
        heldout: HeldoutSet,
        gamma: float,
        sweeps: int,
        method: Method,
        seed: int,
        reference: Sequence[Sequence[int]] = (),
    ) -> None:
        self.heldout = heldout
        self.reference = reference
        self.gamma = gamma
        self.sweeps = sweeps
        self.method = method
        self.seed = seed
        self.averages: dict[tuple[str, str], PosteriorAverage] = {}

    def _probabilities(self, beta: torch.Tensor, gamma: float, index: int) -> torch.Tensor:
        generator = torch.Generator().manual_seed(self.seed + 7919 * (index + 1))
        burn_in = default_burn_in(self.sweeps)
        # A uniform start: the estimator of the recorded peer tables, kept comparable.
        config = GibbsConfig(gamma, self.sweeps, burn_in, self.method, init="uniform")
        return test_token_probabilities(beta.double(), self.heldout, config, generator)

    def _fold(self, model: str, key: str, probabilities: torch.Tensor) -> tuple[float, float]:
        average = self.averages.setdefault((model, key), PosteriorAverage())
        return perplexity_from_probabilities(probabilities), average.add(probabilities)

    def score(
        self, model: str, beta: torch.Tensor, own_gamma: float, index: int
    ) -> tuple[float, float, float, float]:
        """(ppl, ppl_avg) at the common gamma and (ppl, ppl_avg) at the model's own gamma."""
        common = self._probabilities(beta, self.gamma, index)
        own = common if own_gamma == self.gamma else self._probabilities(beta, own_gamma, index)
        return self._fold(model, "common", common) + self._fold(model, "own", own)

    def npmi(self, beta: torch.Tensor) -> float | None:
        """Mean NPMI of the topics' top words in the reference documents (None without any)."""
        if not self.reference:
            return None
        return topic_quality(beta, self.reference).mean_coherence

    def score_common(self, model: str, beta: torch.Tensor, index: int) -> tuple[float, float]:
        """(ppl, ppl_avg) at the common gamma only: for second estimates and curve points."""
        return self._fold(model, "common", self._probabilities(beta, self.gamma, index))


def _point(
    docs: int, tokens: int, train_s: float, scores: tuple[float, ...], eval_s: float
) -> Point:
    return Point(
        docs=docs,
        tokens=tokens,
        train_s=train_s,
        s_per_100_docs=100.0 * train_s / docs,
        tokens_per_s=tokens / train_s if train_s > 0 else math.inf,
        perplexity=scores[0],
        perplexity_avg=scores[1],
        perplexity_own=scores[2],
        perplexity_own_avg=scores[3],
        eval_s=eval_s,
    )


# ---- streamlda runs ---------------------------------------------------------------------------

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
    _synchronize(device)
    run.warmup_s = time.perf_counter() - start
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    # The service's learning session: its learn() is the step the worker and train take.
    session: LearningSession[None] = LearningSession(Settings.model_construct().model, device)
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
        _synchronize(device)
        start = time.perf_counter()
        try:
            session.learn(batch)
            _synchronize(device)  # a GPU's queued work is the learner's time too
        except NonFiniteError as exc:
            run.error = f"{exc} after {docs} documents"
            print(f"  {name}: {run.error}", file=sys.stderr)
            return run
        train_s += time.perf_counter() - start
        docs += batch.n_documents
        tokens += batch.n_tokens
        if spec.revisit:
            _offer(held, host_batch)
            start = time.perf_counter()
            while model.revisited_docs < spec.revisit * model.docs_seen:
                again = _draw(held, spec.revisit_batch or batch.n_documents)
                again = Batch(again.words.to(device), again.offsets)
                session.learn(again, revisit=True, step_scale=scale)
            _synchronize(device)
            train_s += time.perf_counter() - start
        if device.type == "cuda":
            run.gpu_peak_mib = torch.cuda.max_memory_allocated(device) / 2**20
        if index < len(checkpoints) and docs >= checkpoints[index]:
            start = time.perf_counter()
            beta, beta_mean = model.beta.cpu(), model.beta_mean.cpu()
            scores = scorer.score(name, beta, config.gamma, index)
            mean, _ = scorer.score_common(f"{name} mean", beta_mean, index)
            point = _point(docs, tokens, train_s, scores, time.perf_counter() - start)
            point.perplexity_mean = mean
            point.npmi = scorer.npmi(beta_mean)
            run.points.append(point)
            _progress(name, point)
            index += 1
        if observe is not None:
            observe(model, docs)
    return run


def _offer(reservoir: Reservoir, batch: Batch) -> None:
    """Offer each document of ``batch`` to the worker's reservoir, as its word ids in text."""
    words, offsets = batch.words.cpu().tolist(), batch.offsets.tolist()
    for start, end in itertools.pairwise(offsets):
        reservoir.offer(" ".join(map(str, words[start:end])))


def _draw(reservoir: Reservoir, n: int) -> Batch:
    """One revisit minibatch of ``n`` held documents, drawn as the worker draws them."""
    return Batch.from_ids([[int(w) for w in text.split()] for text in reservoir.draw(n)])


def _synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously; the CPU needs no wait)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ---- peers ------------------------------------------------------------------------------------


def run_gensim(
    args: argparse.Namespace,
    chunks: list[list[list[tuple[int, int]]]],
    tokens_per_chunk: list[int],
    checkpoints: list[int],
    vocab: Vocabulary,
    scorer: Scorer,
) -> Run:
    """gensim online VB on the same documents, timing only ``update(chunk)``."""
    from gensim.models import LdaModel

    logging.getLogger("gensim").setLevel(logging.ERROR)
    id2word = dict(enumerate(vocab.words))
    settings: dict[str, Any] = {
        "num_topics": args.topics,
        "chunksize": args.batch_size,
        "passes": 1,
        "update_every": 1,
        "eval_every": None,  # gensim's own perplexity logging is evaluation, not learning
        "random_state": args.seed,
    }

    def build() -> Any:
        return LdaModel(id2word=id2word, **settings)

    run = Run(name="gensim", settings={**settings, "numdocs": args.gensim_numdocs}, family="gensim")
    with peer_threads(args.threads):
        start = time.perf_counter()
        build().update(chunks[0])  # warm imports and numpy
        run.warmup_s = time.perf_counter() - start
        model = build()
        own_gamma = float(model.alpha[0])
        run.settings["alpha"] = own_gamma
        total_docs = sum(len(c) for c in chunks)
        train_s, docs, tokens, index = 0.0, 0, 0, 0
        for chunk, n_tokens in zip(chunks, tokens_per_chunk, strict=True):
            if args.gensim_numdocs == "total":  # as one update(corpus) call: numdocs = D throughout
                model.state.numdocs = total_docs - len(chunk)
            start = time.perf_counter()
            model.update(chunk)
            train_s += time.perf_counter() - start
            docs += len(chunk)
            tokens += n_tokens
            if index < len(checkpoints) and docs >= checkpoints[index]:
                beta = torch.from_numpy(model.get_topics()).double()
                beta = beta / beta.sum(dim=1, keepdim=True)
                run.points.append(
                    _score_peer(scorer, run, beta, own_gamma, index, docs, tokens, train_s)
                )
                index += 1
    return run


def run_sklearn(
    args: argparse.Namespace,
    matrices: list[Any],
    tokens_per_chunk: list[int],
    checkpoints: list[int],
    scorer: Scorer,
) -> Run:
    """scikit-learn's online VB on the same minibatches (CSR), timing only ``partial_fit``; its
    ``total_samples`` is the corpus size N that streamlda's runs get."""
    total = int(args.corpus_size)

    def build() -> Any:
        return peers.sklearn_lda(args.topics, args.batch_size, total, args.seed, args.sklearn_jobs)

    run = Run(name="sklearn", settings={}, family="sklearn")
    warm = build()  # imports scikit-learn, so its BLAS and OpenMP pools exist to be capped
    with peer_threads(args.threads):
        start = time.perf_counter()
        warm.partial_fit(matrices[0])  # warm imports, caches and (with n_jobs > 1) the workers
        run.warmup_s = time.perf_counter() - start
        model = build()
        run.settings = {k: v for k, v in model.get_params().items() if k != "verbose"}
        train_s, docs, tokens, index = 0.0, 0, 0, 0
        for matrix, n_tokens in zip(matrices, tokens_per_chunk, strict=True):
            start = time.perf_counter()
            model.partial_fit(matrix)
            train_s += time.perf_counter() - start
            docs += matrix.shape[0]
            tokens += n_tokens
            if index < len(checkpoints) and docs >= checkpoints[index]:
                gamma = float(model.doc_topic_prior_)
                beta = peers.sklearn_beta(model)
                run.points.append(
                    _score_peer(scorer, run, beta, gamma, index, docs, tokens, train_s)
                )
                index += 1
    return run


def run_tomotopy(
    args: argparse.Namespace,
    corpus: Corpus,
    checkpoints: list[int],
    vocab: Vocabulary,
    scorer: Scorer,
) -> list[Run]:
    """tomotopy, a batch learner: a model per checkpoint on its first documents, scored after
    each of ``--tomotopy-iters`` iterations; the last model also every ``--tomotopy-every``."""
    iterations = args.tomotopy_iter_list
    runs = {
        i: Run(name=f"tomotopy-{i}", settings={}, family="tomotopy", sweeps=i) for i in iterations
    }
    start = time.perf_counter()  # one-time costs: the first alpha re-estimation takes ~0.2 s
    warm = peers.tomotopy_lda(corpus.train[: args.batch_size], vocab.words, args.topics, 1)
    peers.tomotopy_train(warm, int(warm.optim_interval) + 1, args.threads)
    for run in runs.values():
        run.warmup_s = time.perf_counter() - start
    for index, docs in enumerate(checkpoints):
        every = args.tomotopy_every if index == len(checkpoints) - 1 else 0
        marks = set(iterations) | set(range(every, iterations[-1] + 1, every) if every else ())
        documents = corpus.train[:docs]
        tokens = sum(len(d) for d in documents)
        start = time.perf_counter()
        model = peers.tomotopy_lda(documents, vocab.words, args.topics, args.seed)
        peers.tomotopy_train(model, 0, args.threads)  # initialisation: prep, not training
        prep_s = time.perf_counter() - start
        train_s, done = 0.0, 0
        for mark in sorted(marks):
            start = time.perf_counter()
            peers.tomotopy_train(model, mark - done, args.threads)
            train_s += time.perf_counter() - start
            done = mark
            beta = peers.tomotopy_beta(model, vocab.index, len(vocab))
            run = runs.get(mark)
            if run is None:  # a curve point only
                key = f"tomotopy {docs} docs"
                point = _score_curve(scorer, key, beta, index, docs, tokens, train_s)
            else:
                gamma = peers.tomotopy_gamma(model)
                point = _score_peer(scorer, run, beta, gamma, index, docs, tokens, train_s)
                run.points.append(point)
                run.settings = _tomotopy_settings(model, args.threads, mark)
            point.prep_s, point.iterations = prep_s, mark
            if every:
                runs[iterations[-1]].curve.append(point)
    return list(runs.values())


def _tomotopy_settings(model: Any, workers: int, iterations: int) -> dict[str, Any]:
    return {
        "k": int(model.k),
        "alpha_initial": peers.TOMOTOPY_ALPHA,
        "alpha_mean": peers.tomotopy_gamma(model),
        "eta": float(model.eta),
        "optim_interval": int(model.optim_interval),
        "workers": workers,
        "iterations": iterations,
        "used_vocabs": len(model.used_vocabs),
    }


def _score_peer(
    scorer: Scorer,
    run: Run,
    beta: torch.Tensor,
    own_gamma: float,
    index: int,
    docs: int,
    tokens: int,
    train_s: float,
) -> Point:
    """Score a peer's topics at checkpoint ``index``; report progress."""
    start = time.perf_counter()
    scores = scorer.score(run.name, beta, own_gamma, index)
    point = _point(docs, tokens, train_s, scores, time.perf_counter() - start)
    point.npmi = scorer.npmi(beta)
    _progress(run.name, point)
    return point


def _score_curve(
    scorer: Scorer,
    key: str,
    beta: torch.Tensor,
    index: int,
    docs: int,
    tokens: int,
    train_s: float,
) -> Point:
    """A point of tomotopy's curve: scored at the common gamma only (own columns NaN)."""
    start = time.perf_counter()
    ppl, avg = scorer.score_common(key, beta, index)
    return _point(
        docs, tokens, train_s, (ppl, avg, math.nan, math.nan), time.perf_counter() - start
    )


def _progress(name: str, p: Point) -> None:
    mean = "" if p.perplexity_mean is None else f"  mean {p.perplexity_mean:8.1f}"
    mean += "" if p.npmi is None else f"  npmi {p.npmi:+.3f}"
    print(
        f"  {name:12s} {p.docs:6d} docs  ppl {p.perplexity:8.1f}{mean}  avg {p.perplexity_avg:8.1f}"
        f"  {p.s_per_100_docs:.3f} s/100 docs  {p.tokens_per_s:9.0f} tok/s"
        f"  (eval {p.eval_s:.1f} s)",
        file=sys.stderr,
        flush=True,
    )


# ---- output -----------------------------------------------------------------------------------


def _cell(value: float | None, width: int, digits: int = 1) -> str:
    """``value`` right-aligned in ``width`` columns, or '-' for none or NaN."""
    if value is None or math.isnan(value):
        return f"{'-':>{width}s}"
    return f"{value:{width}.{digits}f}"


def _docs_label(docs: int) -> str:
    return f"{docs // 1000}k" if docs % 1000 == 0 else str(docs)


def format_table(runs: list[Run], eval_gamma: float) -> str:
    """A readable table: model x checkpoint, perplexities, speeds and ratios to the peers."""
    rates = {
        r.name: {p.docs: p.tokens_per_s for p in r.points}
        for r in runs
        if r.name in REFERENCES and r.points
    }
    width = max([8, *(len(r.name) for r in runs)])
    header = (
        f"{'model':{width}s} {'docs':>6s} {'ppl':>8s} {'ppl_mean':>8s} {'ppl_avg':>8s} "
        f"{'ppl_own':>8s} {'own_avg':>8s} {'s/100doc':>9s} {'tokens/s':>9s}"
        + "".join(f" {'x ' + name:>9s}" for name in rates)
        + f" {'x paper':>8s}"
    )
    lines = [
        f"perplexity: ppl/ppl_avg at the common gamma={eval_gamma:g}, ppl of streamlda's current "
        "sample; ppl_mean of its beta_mean (served); ppl_own/own_avg at each model's own prior",
        "x gensim / x sklearn = tokens/s over theirs at the same checkpoint; "
        f"x paper = {PAPER_S_PER_100} s/100 docs over ours",
        header,
        "-" * len(header),
    ]
    for run in runs:
        if run.error and not run.points:
            lines.append(f"{run.name:{width}s} FAILED: {run.error}")
        for p in run.points:
            ratios = "".join(
                " " + _cell(p.tokens_per_s / rate[p.docs] if p.docs in rate else None, 9, 2)
                for rate in rates.values()
            )
            lines.append(
                f"{run.name:{width}s} {p.docs:6d} {p.perplexity:8.1f} "
                f"{_cell(p.perplexity_mean, 8)} {p.perplexity_avg:8.1f} "
                f"{_cell(p.perplexity_own, 8)} {_cell(p.perplexity_own_avg, 8)} "
                f"{p.s_per_100_docs:9.4f} {p.tokens_per_s:9.0f}{ratios} "
                f"{PAPER_S_PER_100 / p.s_per_100_docs:8.1f}"
            )
        if run.error and run.points:
            lines.append(f"{run.name:{width}s} stopped: {run.error}")
    lines += [
        f"{run.name}: peak GPU memory {run.gpu_peak_mib:.0f} MiB ({run.device})"
        for run in runs
        if run.gpu_peak_mib is not None
    ]
    return "\n".join(lines)


def time_to_quality(runs: list[Run], checkpoints: list[int]) -> list[dict[str, Any]]:
    """Per system: served perplexity and learner seconds at each checkpoint; tokens/s, ns per
    token-sweep (Gibbs learners), prep seconds (tomotopy) and the last sample's perplexity
    (streamlda) at the last checkpoint."""
    rows = []
    for run in runs:
        if not run.points:
            continue
        at = {p.docs: p for p in run.points}
        last = run.points[-1]
        sweeps = last.tokens * run.sweeps if run.sweeps else 0
        rows.append(
            {
                "system": run.name,
                "family": run.family,
                "at": {
                    d: {"perplexity": at[d].served, "train_s": at[d].train_s, "npmi": at[d].npmi}
                    for d in checkpoints
                    if d in at
                },
                "tokens_per_s": last.tokens_per_s,
                "ns_per_token_sweep": 1e9 * last.train_s / sweeps if sweeps else None,
                "prep_s": last.prep_s if run.family == "tomotopy" else None,
                "sample_perplexity": None if last.perplexity_mean is None else last.perplexity,
            }
        )
    return rows


def format_time_to_quality(
    rows: list[dict[str, Any]], checkpoints: list[int], eval_gamma: float
) -> str:
    """The time-to-quality table: systems x checkpoints (perplexity, learner seconds)."""
    width = max([8, *(len(r["system"]) for r in rows)])
    columns = "".join(
        f" {'ppl@' + _docs_label(d):>9s} {'s@' + _docs_label(d):>8s}" for d in checkpoints
    )
    header = (
        f"{'system':{width}s}{columns} {'npmi':>7s} {'tokens/s':>9s} {'ns/tok-sweep':>12s} "
        f"{'prep_s':>7s} {'sample':>8s}"
    )
    lines = [
        f"time to quality: held-out perplexity (gamma={eval_gamma:g}) of the served estimate "
        "(streamlda: beta_mean; 'sample' = its current sample at the end) and learner seconds; "
        "npmi: the served estimate's mean NPMI (top 10 words, held-out documents) at the end",
        "tomotopy: a model per column, trained on the first documents (prep_s = add_doc + "
        "initialisation, not in s@); tokens/s and ns per token x sweep (or iteration) at the end",
        header,
        "-" * len(header),
    ]
    for row in rows:
        cells = "".join(
            f" {_cell(row['at'][d]['perplexity'], 9)} {_cell(row['at'][d]['train_s'], 8, 2)}"
            if d in row["at"]
            else f" {'-':>9s} {'-':>8s}"
            for d in checkpoints
        )
        last = row["at"][max(row["at"])] if row["at"] else {}
        lines.append(
            f"{row['system']:{width}s}{cells} {_cell(last.get('npmi'), 7, 3)} "
            f"{row['tokens_per_s']:9.0f} "
            f"{_cell(row['ns_per_token_sweep'], 12)} {_cell(row['prep_s'], 7, 2)} "
            f"{_cell(row['sample_perplexity'], 8)}"
        )
    return "\n".join(lines)


def targets(runs: list[Run], n_topics: int) -> dict[str, Any]:
    """How far the speed and peer goals are met at the last checkpoint of each streamlda run."""
    last = {r.name: r.points[-1] for r in runs if r.points}
    gensim, sklearn = last.get("gensim"), last.get("sklearn")
    out: dict[str, Any] = {}
    for run in runs:
        if run.family != "streamlda" or not run.points:
            continue
        p = run.points[-1]
        entry: dict[str, Any] = {
            "s_per_100_docs": p.s_per_100_docs,
            "meets_0.08_s_per_100": p.s_per_100_docs <= TARGET_S_PER_100,
        }
        if gensim is not None:
            entry["x_gensim_tokens_per_s"] = p.tokens_per_s / gensim.tokens_per_s
            entry["meets_2x_gensim"] = entry["x_gensim_tokens_per_s"] >= TARGET_GENSIM_RATIO
            entry["perplexity_below_gensim"] = p.perplexity < gensim.perplexity
        if sklearn is not None:
            entry.update(_sklearn_targets(p, sklearn, str(run.settings["sampler"]), n_topics))
        out[run.name] = entry
    return out


def _sklearn_targets(p: Point, sklearn: Point, sampler: str, n_topics: int) -> dict[str, Any]:
    """The peer goal against scikit-learn: at K=50 served perplexity <= 0.95x and tokens/s >= 2x
    (SGRLD) / 1.5x (SGRHMC); at other K (and for other samplers' speed) ahead on both."""
    speed_goal = TARGET_SKLEARN_SPEED.get(sampler, 1.0) if n_topics == 50 else 1.0
    ppl_goal = TARGET_SKLEARN_PPL if n_topics == 50 else 1.0
    speed = p.tokens_per_s / sklearn.tokens_per_s
    ratio = p.served / sklearn.served
    return {
        "x_sklearn_tokens_per_s": speed,
        "sklearn_speed_goal": speed_goal,
        "meets_sklearn_speed": speed >= speed_goal,
        "ppl_over_sklearn": ratio,
        "ppl_sample_over_sklearn": p.perplexity / sklearn.served,
        "sklearn_ppl_goal": ppl_goal,
        "meets_sklearn_ppl": ratio <= ppl_goal,
    }


def format_targets(summary: dict[str, Any]) -> str:
    """One line per streamlda run: the targets, met or not."""
    lines = [
        "targets at the last checkpoint: speed (<= 0.08 s/100 docs; >= 2x gensim tokens/s; "
        "sample ppl below gensim's); peers (served ppl <= 0.95x sklearn's and tokens/s >= 2x "
        "(sgrld) / 1.5x (sgrhmc) sklearn's at K=50; ahead of sklearn on both at other K):"
    ]
    width = max([7, *(len(name) for name in summary)])
    for name, t in summary.items():
        parts = [
            f"{t['s_per_100_docs']:.3f} s/100 docs "
            f"({'met' if t['meets_0.08_s_per_100'] else 'not met'})"
        ]
        if "x_gensim_tokens_per_s" in t:
            parts.append(
                f"{t['x_gensim_tokens_per_s']:.2f}x gensim "
                f"({'met' if t['meets_2x_gensim'] else 'not met'})"
            )
            parts.append(
                "ppl below gensim" if t["perplexity_below_gensim"] else "ppl NOT below gensim"
            )
        if "x_sklearn_tokens_per_s" in t:
            parts.append(
                f"ppl {t['ppl_over_sklearn']:.3f}x sklearn "
                f"(sample {t['ppl_sample_over_sklearn']:.3f}x; goal <= {t['sklearn_ppl_goal']:g}: "
                f"{'met' if t['meets_sklearn_ppl'] else 'not met'})"
            )
            parts.append(
                f"{t['x_sklearn_tokens_per_s']:.2f}x sklearn tokens/s (goal >= "
                f"{t['sklearn_speed_goal']:g}: {'met' if t['meets_sklearn_speed'] else 'not met'})"
            )
        lines.append(f"  {name:{width}s} " + "; ".join(parts))
    return "\n".join(lines)


def write_plot(runs: list[Run], path: Path, title: str) -> None:
    """PNG of served held-out perplexity against learner seconds (log), a line per system."""
    from matplotlib.figure import Figure  # a bare Figure renders with Agg: no pyplot, no GUI

    fig = Figure(figsize=(10, 6.5), layout="constrained")
    ax = fig.subplots()
    markers = "osD^v<>phP*X"
    for i, run in enumerate(r for r in runs if r.points):
        (line,) = ax.plot(
            [p.train_s for p in run.points],
            [p.served for p in run.points],
            marker=markers[i % len(markers)],
            label=run.name,
        )
        if run.curve:
            ax.plot(
                [p.train_s for p in run.curve],
                [p.perplexity for p in run.curve],
                linestyle=":",
                marker=".",
                color=line.get_color(),
                label=f"{run.family} on {run.curve[0].docs} docs, by iteration",
            )
    ax.set_xscale("log")
    ax.set_xlabel("learner seconds (log scale)")
    ax.set_ylabel("held-out perplexity")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.savefig(path, dpi=120)


# ---- command line -----------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line settings; ``--quick`` shrinks the unset sizes for a smoke run."""
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="run specs: sampler[:field=value]..., any LearnerConfig field but n_words and "
        "extra ('none' unsets; schedule=a[/b[/c]]), e.g. "
        "'sgrld,sgrld:sweeps=10:gibbs=rao-blackwell,sgrhmc:mean_decay=0.9'",
    )
    p.add_argument("--corpus-dir", type=Path, default=DEFAULT_CORPUS)
    vocabulary = p.add_mutually_exclusive_group()
    vocabulary.add_argument(
        "--vocab", type=Path, default=None, help="default: CORPUS_DIR/vocab-7702.txt"
    )
    vocabulary.add_argument(
        "--vocab-size",
        type=int,
        default=None,
        help="W: build the vocabulary from the stream's first --vocab-docs texts, as the service",
    )
    p.add_argument(
        "--vocab-docs",
        type=int,
        default=ModelSettings.model_fields["vocab_docs"].default,
        help="texts counted for --vocab-size (default: the service's)",
    )
    p.add_argument("--docs", type=int, default=None, help="training documents (10000)")
    p.add_argument("--heldout", type=int, default=None, help="held-out documents (1000)")
    p.add_argument("--checkpoints", default=None, help="comma list (2000,5000,10000)")
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=50)
    p.add_argument(
        "--streamlda-batch-size",
        type=int,
        default=ModelSettings.model_fields["batch_size"].default,
        help="streamlda's minibatch (default: the service's); --batch-size is the peers'",
    )
    p.add_argument("--sweeps", type=int, default=None, help="Gibbs sweeps (learner's default)")
    p.add_argument("--samplers", default="sgld,sghmc,sgrld,sgrhmc")
    p.add_argument(
        "--runs", default=None, help="comma list of streamlda run specs; replaces --samplers"
    )
    p.add_argument("--gensim", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument(
        "--gensim-numdocs",
        choices=["total", "seen"],
        default="seen",
        help="gensim's corpus size: all D documents, as one LdaModel(corpus) call, "
        "or the documents seen so far (default), as a stream of update() calls",
    )
    p.add_argument("--sklearn", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument(
        "--sklearn-jobs",
        type=int,
        default=1,
        help="scikit-learn's n_jobs (default 1: its process pool costs 3-4x on minibatches of "
        "50); its BLAS/OpenMP pools get --threads either way",
    )
    p.add_argument("--tomotopy", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--tomotopy-iters", default="50,200", help="Gibbs iterations, comma list")
    p.add_argument(
        "--tomotopy-every",
        type=int,
        default=10,
        help="score the last checkpoint's tomotopy model every this many iterations (0: no)",
    )
    p.add_argument("--gibbs", choices=get_args(Method), default=None, help="(learner's default)")
    p.add_argument("--alpha", type=float, default=None, help="topic prior (default: sampler's)")
    p.add_argument("--step-size", type=float, default=None, help="constant eps (sampler's)")
    p.add_argument("--friction", type=float, default=1.0, help="friction C of SGHMC/SGRHMC")
    p.add_argument(
        "--corpus-size",
        type=float,
        default=None,
        help="N in the gradient (default: the service's, English Wikipedia's article count)",
    )
    p.add_argument("--corpus-growth", action="store_true", help="N = max(N, documents seen)")
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    p.add_argument(
        "--device",
        default="cpu",
        help="streamlda's device unless a run spec names one (auto: CUDA when present); "
        "the peers and the scoring run on the CPU",
    )
    p.add_argument(
        "--repeat",
        action="store_true",
        help="cycle through the training documents when --docs exceeds the corpus",
    )
    p.add_argument("--eval-gamma", type=float, default=0.01, help="common document prior")
    p.add_argument("--eval-sweeps", type=int, default=50)
    p.add_argument("--max-tokens", type=int, default=None, help="truncate documents (testing)")
    p.add_argument(
        "--threads", type=int, default=2, help="torch, numba, BLAS/OpenMP and tomotopy threads"
    )
    p.add_argument("--torch-threads", type=int, default=None, help="override for torch only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="600 train / 200 held-out documents")
    p.add_argument("--json", type=Path, default=None, help="write all results here")
    p.add_argument("--plot", type=Path, default=None, help="write a PNG: perplexity vs seconds")
    args = p.parse_args(argv)
    quick = args.quick
    args.docs = args.docs if args.docs is not None else (600 if quick else 10_000)
    args.heldout = args.heldout if args.heldout is not None else (200 if quick else 1_000)
    if args.checkpoints is None:
        args.checkpoints = "300,600" if quick else "2000,5000,10000"
    args.checkpoint_list = sorted({int(c) for c in args.checkpoints.split(",") if c.strip()})
    args.tomotopy_iter_list = sorted({int(i) for i in args.tomotopy_iters.split(",") if i.strip()})
    sizes = [args.docs, args.heldout, args.topics, args.batch_size, args.threads]
    sizes += [args.streamlda_batch_size, args.sweeps or 1, args.vocab_size or 1, args.vocab_docs]
    if min([*sizes, args.sklearn_jobs, *args.tomotopy_iter_list]) < 1:
        p.error("sizes, counts and iterations must be positive")
    if args.tomotopy and not args.tomotopy_iter_list:
        p.error("--tomotopy-iters is empty (or pass --no-tomotopy)")
    if args.tomotopy_every < 0:
        p.error("--tomotopy-every must be 0 or positive")
    if args.corpus_size is None:  # the service's default N, resolved as its settings resolve it
        args.corpus_size = float(ModelSettings.model_fields["wikipedia_articles"].default)
    args.run_specs = _run_specs(p, args)
    if args.vocab is None:
        args.vocab = args.corpus_dir / "vocab-7702.txt"
    return args


def _run_specs(p: argparse.ArgumentParser, args: argparse.Namespace) -> list[RunSpec]:
    """The streamlda runs (``--runs``, else one per ``--samplers`` entry), each checked by
    building its LearnerConfig."""
    text = args.runs if args.runs is not None else args.samplers
    specs: list[RunSpec] = []
    for item in (s for s in text.split(",") if s.strip()):
        try:
            spec = parse_run_spec(item)
            make_config(args, spec, n_words=1)
            resolve_device(spec.device or args.device)  # cuda without a GPU fails here, not later
        except (ValueError, TypeError, RuntimeError) as exc:
            p.error(f"run {item!r}: {exc}")
        if any(s.name == spec.name for s in specs):
            p.error(f"run {item!r} is given twice")
        specs.append(spec)
    return specs


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; print the tables; return (and optionally write) the results."""
    args = parse_args(argv)
    numba_threads = set_threads(args.threads, args.torch_threads)
    start = time.perf_counter()
    if args.vocab_size is not None:
        vocab = stream_vocabulary(args.corpus_dir, args.vocab_size, args.vocab_docs)
    else:
        vocab = Vocabulary.load(args.vocab)
    corpus = read_corpus(
        args.corpus_dir, vocab, args.heldout, args.docs, args.max_tokens, short_ok=args.repeat
    )
    if args.repeat and 0 < len(corpus.train) < args.docs:
        print(
            f"--repeat: {len(corpus.train)} training documents cycled to {args.docs}",
            file=sys.stderr,
        )
        corpus.train = repeated(corpus.train, args.docs)
    n_docs = len(corpus.train)
    checkpoints = checkpoint_docs(args.checkpoint_list, n_docs, args.batch_size)
    groups = minibatches(corpus.train, args.batch_size)
    tokens = [sum(len(d) for d in g) for g in groups]
    heldout = HeldoutSet.from_documents(corpus.heldout)
    bows = [[sorted(Counter(d).items()) for d in g] for g in groups] if args.gensim else []
    matrices = [peers.doc_term_matrix(g, len(vocab)) for g in groups] if args.sklearn else []
    prep_s = time.perf_counter() - start
    tokens_per_doc = corpus.train_tokens / max(n_docs, 1)
    print(
        f"corpus: {len(corpus.heldout)} held-out docs ({heldout.n_test_tokens} test tokens), "
        f"{n_docs} training docs ({corpus.train_tokens} tokens, {tokens_per_doc:.0f}/doc), "
        f"{corpus.skipped_empty} skipped with no vocabulary word; prepared in {prep_s:.1f} s",
        file=sys.stderr,
    )
    print(
        f"threads: torch {torch.get_num_threads()}, numba {numba_threads}, BLAS/OpenMP and "
        f"tomotopy workers {args.threads}, sklearn n_jobs {args.sklearn_jobs}; K={args.topics} "
        f"n={args.batch_size} (streamlda {args.streamlda_batch_size}) sweeps={args.sweeps} "
        f"gibbs={args.gibbs} N={args.corpus_size:g} W={len(vocab)} "
        f"eval gamma={args.eval_gamma:g}; checkpoints {checkpoints}",
        file=sys.stderr,
    )
    scorer = Scorer(
        heldout, args.eval_gamma, args.eval_sweeps, "exact", args.seed, reference=corpus.heldout
    )
    runs: list[Run] = []
    if args.gensim:
        runs.append(run_gensim(args, bows, tokens, checkpoints, vocab, scorer))
    if args.sklearn:
        runs.append(run_sklearn(args, matrices, tokens, checkpoints, scorer))
    if args.tomotopy:
        runs += run_tomotopy(args, corpus, checkpoints, vocab, scorer)
    for spec in args.run_specs:
        size = spec.batch_size or args.streamlda_batch_size
        batches = [Batch.from_ids(g) for g in minibatches(corpus.train, size)]
        runs.append(run_streamlda(spec, args, batches, checkpoints, vocab, scorer))
    summary = targets(runs, args.topics)
    quality = time_to_quality(runs, checkpoints)
    print(format_table(runs, args.eval_gamma))
    print()
    print(format_time_to_quality(quality, checkpoints, args.eval_gamma))
    print()
    print(format_targets(summary))
    if args.plot is not None:
        title = (
            f"K={args.topics}, {n_docs} training / {len(corpus.heldout)} held-out documents, "
            f"gamma={args.eval_gamma:g}; markers at {', '.join(map(str, checkpoints))} docs"
        )
        write_plot(runs, args.plot, title)
        print(f"plot written to {args.plot}", file=sys.stderr)
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv) if argv is None else " ".join(argv),
        "settings": {
            k: (str(v) if isinstance(v, Path) else v)
            for k, v in vars(args).items()
            if not k.endswith("_list") and k != "run_specs"
        },
        "threads": {
            "torch": torch.get_num_threads(),
            "numba": numba_threads,
            "blas_openmp": args.threads,
            "tomotopy_workers": args.threads,
            "sklearn_n_jobs": args.sklearn_jobs,
        },
        "checkpoints": checkpoints,
        "corpus": {
            "files": corpus.files,
            "heldout_docs": len(corpus.heldout),
            "heldout_test_tokens": heldout.n_test_tokens,
            "train_docs": n_docs,
            "train_tokens": corpus.train_tokens,
            "skipped_empty": corpus.skipped_empty,
        },
        "paper_s_per_100_docs": PAPER_S_PER_100,
        "runs": [asdict(r) for r in runs],
        "time_to_quality": quality,
        "targets": summary,
    }
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
