"""``streamlda train``: learn topics offline from a source, report held-out perplexity, export.

The first H documents of the source form the held-out set and are never trained on. Output:
a readable table (or one JSON object per evaluation with ``--json``), then the top words of
each topic, and ``--out DIR`` with the checkpoint, topics.json, beta.npy and vocab.txt. The
perplexity, the words and the exports are of beta_mean; beta-sample.npy holds the last sample.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import torch

from lda.batch import Batch
from lda.coherence import topic_quality
from lda.model import NonFiniteError, StreamingLDA, resolve_device
from lda.perplexity import HeldoutSet
from lda.vocab import Vocabulary, build_vocabulary
from service.errors import CommandError
from service.learner_flags import add_learner_flags
from service.model_store import (
    CHECKPOINT_NAME,
    export_model,
    learner_config,
    save_model,
    topics_summary,
)
from service.runtime import set_threads
from service.settings import Settings
from service.sources import Article, SourceError, open_source

TOP_WORDS_SHOWN = 10
TOP_WORDS_EXPORTED = 100


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``train`` subcommand."""
    p = subparsers.add_parser("train", help="learn topics offline from a source")
    p.add_argument("--source", required=True, help="jsonl:PATH, dump:PATH or wikipedia")
    add_learner_flags(p)
    p.add_argument("--docs", type=int, required=True, help="documents to train on")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument("--json", action="store_true", help="one JSON object per evaluation")
    p.set_defaults(func=run)


@dataclass
class Report:
    """Throughput and perplexity rows, printed as a table or as JSON lines."""

    stream: TextIO
    as_json: bool
    sampler: str
    started: float = field(default_factory=time.perf_counter)
    learner_seconds: float = 0.0
    header_done: bool = False

    def row(
        self, model: StreamingLDA, perplexity: float, averaged: float, quality: Quality
    ) -> None:
        busy = max(self.learner_seconds, 1e-9)
        record = {
            "docs_seen": model.docs_seen,
            "perplexity": _number(perplexity),
            "perplexity_avg": _number(averaged),
            "coherence": _number(quality.coherence),
            "diversity": _number(quality.diversity),
            "docs_per_second": round(model.docs_seen / busy, 3),
            "tokens_per_second": round(model.tokens_seen / busy, 1),
            "elapsed_s": round(time.perf_counter() - self.started, 3),
            "sampler": self.sampler,
        }
        if self.as_json:
            print(json.dumps(record), file=self.stream, flush=True)
            return
        if not self.header_done:
            print(
                f"{'docs':>8} {'perplexity':>11} {'averaged':>10} {'coherence':>9} "
                f"{'diversity':>9} {'docs/s':>8} {'tokens/s':>10} {'elapsed':>8}",
                file=self.stream,
            )
            self.header_done = True
        print(
            f"{record['docs_seen']:>8} {perplexity:>11.1f} {averaged:>10.1f} "
            f"{quality.coherence:>9.3f} {quality.diversity:>9.2f} "
            f"{record['docs_per_second']:>8.1f} {record['tokens_per_second']:>10.0f} "
            f"{record['elapsed_s']:>7.1f}s",
            file=self.stream,
            flush=True,
        )


def _number(value: float) -> float | None:
    """A figure for JSON: null when undefined (no held-out test tokens), never NaN."""
    return round(value, 4) if math.isfinite(value) else None


@dataclass(frozen=True)
class Quality:
    """Mean NPMI coherence of the served topics' top words in the held-out documents, and
    their diversity (lda.coherence)."""

    coherence: float
    diversity: float

    @classmethod
    def of(cls, model: StreamingLDA, documents: list[list[int]]) -> Quality:
        return cls(*topic_quality(model.beta_mean, documents))


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty():
        width = 30
        filled = width * done // max(total, 1)
        bar = "#" * filled + "-" * (width - filled)
        print(f"\r[{bar}] {done}/{total} docs", end="", file=sys.stderr, flush=True)


def _encoded(
    articles: Iterator[Article], vocabulary: Vocabulary, skipped: list[int]
) -> Iterator[list[int]]:
    """Word ids of each article; articles with no in-vocabulary word are counted and skipped."""
    for article in articles:
        ids = vocabulary.encode(article.text)
        if ids:
            yield ids
        else:
            skipped[0] += 1


def _vocabulary(
    settings: Settings, articles: Iterator[Article]
) -> tuple[Vocabulary, Iterator[Article]]:
    """The vocabulary file, or one built from the first documents (which are then replayed)."""
    if settings.vocab is not None:
        try:
            return Vocabulary.load(settings.vocab), articles
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read vocabulary {settings.vocab}: {exc}") from exc
    head = list(itertools.islice(articles, settings.vocab_docs))
    try:
        vocabulary = build_vocabulary((a.text for a in head), settings.vocab_size)
    except ValueError as exc:
        raise CommandError(f"cannot build a vocabulary: {exc}") from exc
    return vocabulary, itertools.chain(head, articles)


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Train on ``--docs`` documents after the held-out ones and write ``--out``."""
    if args.docs < 1:
        raise CommandError("--docs must be at least 1")
    try:
        device = resolve_device(settings.device)
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    set_threads(settings.threads)
    out_dir: Path = args.out
    try:
        source = open_source(settings.source, settings=settings)
        vocabulary, articles = _vocabulary(settings, iter(source))
        _make_output_directory(out_dir)
        skipped = [0]
        documents = _encoded(articles, vocabulary, skipped)
        heldout_docs = list(itertools.islice(documents, settings.heldout))
        model = _new_model(settings, len(vocabulary), device)
        report = Report(sys.stdout, args.json, settings.sampler)
        heldout = HeldoutSet.from_documents(heldout_docs, device) if heldout_docs else None
        _train(model, documents, heldout, heldout_docs, settings, args.docs, report)
    except SourceError as exc:
        raise CommandError(str(exc)) from exc
    except NonFiniteError as exc:
        raise CommandError(f"{exc}; try a smaller --step-size") from exc
    if sys.stderr.isatty():
        print(file=sys.stderr)
    if model.docs_seen == 0:
        raise CommandError(
            f"no documents left to train on: the source gave {len(heldout_docs)} with "
            f"in-vocabulary words and --heldout takes the first {settings.heldout}"
        )
    if model.docs_seen < args.docs:
        print(
            f"note: the source ran out after {model.docs_seen} training documents",
            file=sys.stderr,
        )
    extra = {"skipped_no_vocabulary_words": skipped[0], "source_skips": dict(source.skipped.counts)}
    try:
        save_model(out_dir / CHECKPOINT_NAME, model, vocabulary, settings, extra)
        export_model(out_dir, model, vocabulary, TOP_WORDS_EXPORTED)
    except OSError as exc:
        raise CommandError(f"cannot write the model to {out_dir}: {exc}") from exc
    _print_topics(model, vocabulary, sys.stderr if args.json else sys.stdout)
    return 0


def _make_output_directory(out_dir: Path) -> None:
    """Create ``--out`` once the source and vocabulary are known to be readable."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"cannot create output directory {out_dir}: {exc}") from exc


def _new_model(settings: Settings, n_words: int, device: torch.device) -> StreamingLDA:
    """The learner, or one error line when K x W does not fit in memory."""
    try:
        return StreamingLDA(learner_config(settings, n_words), device, settings.seed)
    except (RuntimeError, MemoryError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CommandError(
            f"cannot allocate the model ({settings.topics} topics x {n_words} words): {first}"
        ) from exc


def _train(
    model: StreamingLDA,
    documents: Iterator[list[int]],
    heldout: HeldoutSet | None,
    heldout_docs: list[list[int]],
    settings: Settings,
    total: int,
    report: Report,
) -> None:
    next_eval = settings.eval_every
    while model.docs_seen < total:
        size = min(settings.batch_size, total - model.docs_seen)
        chunk = list(itertools.islice(documents, size))
        if not chunk:
            break
        started = time.perf_counter()
        model.update(Batch.from_ids(chunk, model.device))
        report.learner_seconds += time.perf_counter() - started
        _progress(model.docs_seen, total)
        if heldout is not None and model.docs_seen >= next_eval:
            report.row(model, *model.evaluate(heldout), Quality.of(model, heldout_docs))
            next_eval += settings.eval_every
    if heldout is not None and model.docs_seen and model.docs_seen % settings.eval_every:
        report.row(model, *model.evaluate(heldout), Quality.of(model, heldout_docs))


def _print_topics(model: StreamingLDA, vocabulary: Vocabulary, stream: TextIO) -> None:
    for topic in topics_summary(model, vocabulary, TOP_WORDS_SHOWN):
        words = " ".join(w["word"] for w in topic["words"])
        print(f"topic {topic['id']:>3}: {words}", file=stream)
