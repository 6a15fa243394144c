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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import torch

from lda.evaluation.coherence import topic_quality
from lda.model import NonFiniteError, StreamingLDA, resolve_device
from lda.vocab import Vocabulary
from service.errors import CommandError
from service.ingest.bounded_clean import BoundedCleaner
from service.ingest.sources import Article, SourceError, open_source
from service.ingest.sources.wikipedia import WikipediaConfig
from service.learn.model_store import CHECKPOINT_NAME, export_model, save_model, topics_summary
from service.learn.runtime import set_threads
from service.learn.seeds import SeedsError, seed_prior, tokenised
from service.learn.session import LearningSession, ModelTooLarge, VocabularyError
from service.seeds_file import given_seeds
from service.settings import Settings, add_flags
from service.store.topic_seeds import TopicSeeds

TOP_WORDS_SHOWN = 10
TOP_WORDS_EXPORTED = 100


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``train`` subcommand."""
    p = subparsers.add_parser("train", help="learn topics offline from a source")
    add_flags(p, "train")
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
    their diversity (lda.evaluation.coherence)."""

    coherence: float
    diversity: float

    @classmethod
    def of(cls, beta: torch.Tensor, documents: list[list[int]]) -> Quality:
        quality = topic_quality(beta, documents)
        return cls(quality.mean_coherence, quality.diversity)


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty():
        width = 30
        filled = width * done // max(total, 1)
        bar = "#" * filled + "-" * (width - filled)
        print(f"\r[{bar}] {done}/{total} docs", end="", file=sys.stderr, flush=True)


def _load_vocabulary(path: Path) -> Vocabulary:
    try:
        return Vocabulary.load(path)
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot read vocabulary {path}: {exc}") from exc


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Train on ``--docs`` documents after the held-out ones and write ``--out``."""
    if args.docs < 1:
        raise CommandError("--docs must be at least 1")
    try:
        device = resolve_device(settings.model.device)
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    try:
        seeds = tokenised(
            given_seeds(settings.model.seeds, settings.model.topics), settings.model.seed_strength
        )
    except SeedsError as exc:
        raise CommandError(f"seeds file {settings.model.seeds}: {exc}") from exc
    set_threads(settings.model.threads)
    out_dir: Path = args.out
    session: LearningSession[None] = LearningSession(
        settings.model, device, shaping=settings.shaping.config()
    )
    session.kept_words = frozenset(word for s in seeds.values() for word in s.words)
    try:
        with BoundedCleaner() as cleaner:  # wikitext cleaned as the scraper does: bounded
            source = open_source(
                settings.scraper.source,
                wikipedia=settings.part(WikipediaConfig),
                max_article_bytes=settings.scraper.max_article_bytes,
                clean=cleaner,
            )
            if settings.model.vocab is not None:
                session.begin(_load_vocabulary(settings.model.vocab))
            _make_output_directory(out_dir)
            report = Report(sys.stdout, args.json, settings.model.sampler)
            empty = _train(session, iter(source), args.docs, report, seeds)
    except SourceError as exc:
        raise CommandError(str(exc)) from exc
    except (VocabularyError, ModelTooLarge) as exc:
        raise CommandError(str(exc)) from exc
    except NonFiniteError as exc:
        raise CommandError(f"{exc}; try a smaller --step-size") from exc
    if sys.stderr.isatty():
        print(file=sys.stderr)
    model, vocabulary = session.model, session.vocabulary
    if model is None or vocabulary is None or model.docs_seen == 0:
        raise CommandError(
            f"no documents left to train on: the source gave {len(session.heldout_docs)} with "
            f"in-vocabulary words and --heldout takes the first {settings.model.heldout}"
        )
    if model.docs_seen < args.docs:
        print(
            f"note: the source ran out after {model.docs_seen} training documents",
            file=sys.stderr,
        )
    extra = {"skipped_no_vocabulary_words": empty, "source_skips": dict(source.skipped.counts)}
    try:
        save_model(out_dir / CHECKPOINT_NAME, model, vocabulary, settings.recorded(), extra)
        export_model(out_dir, model, vocabulary, TOP_WORDS_EXPORTED)
    except OSError as exc:
        raise CommandError(f"cannot write the model to {out_dir}: {exc}") from exc
    _print_topics(model, vocabulary, sys.stderr if args.json else sys.stdout)
    said = session.shaper.summary(model)  # nothing while K is fixed
    if said:
        print(said, file=sys.stderr)
    return 0


def _make_output_directory(out_dir: Path) -> None:
    """Create ``--out`` once the source and vocabulary are known to be readable."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"cannot create output directory {out_dir}: {exc}") from exc


def _train(
    session: LearningSession[None],
    articles: Iterator[Article],
    total: int,
    report: Report,
    seeds: Mapping[int, TopicSeeds] | None = None,
) -> int:
    """Feed the session until ``total`` documents are trained or the source ends (the last
    minibatch is cut to land on ``total``), the ``seeds``' prior over each vocabulary; the
    documents with no vocabulary word."""
    batch_size = session.config.batch_size
    empty = 0
    evaluated = 0
    seeded: int | None = None  # the vocabulary version the seeds' prior is over
    for article in itertools.chain(articles, [None]):
        ended = article is None
        placed = session.flush() if article is None else session.offer([(None, article.text)])
        empty += sum(p.kind == "empty" for p in placed)
        model = session.model
        if model is None:
            continue
        while session.buffer and (
            ended or len(session.buffer) >= min(batch_size, total - model.docs_seen)
        ):
            vocab = session.vocabulary
            if seeds and vocab is not None and seeded != vocab.version:
                model.set_seeds(seed_prior(seeds, vocab, model))
                seeded = vocab.version
            _, batch = session.take(total - model.docs_seen)
            session.learn(batch)
            if session.refresh_due():
                session.refresh()
                empty += len(session.take_emptied())  # left with no word of the new words
            report.learner_seconds = session.busy_s
            _progress(model.docs_seen, total)
            if session.heldout is not None and session.evaluation_due():
                _evaluate(session, report)
                evaluated = model.docs_seen
            if model.docs_seen >= total:
                break
        if model.docs_seen >= total:
            break
    model = session.model
    if session.heldout is not None and model is not None and model.docs_seen != evaluated:
        _evaluate(session, report)
    return empty


def _evaluate(session: LearningSession[None], report: Report) -> None:
    model, heldout = session.model, session.heldout
    assert model is not None and heldout is not None
    beta = model.beta_mean  # formed once (a K x W matrix): scored, then its top words
    live = model.live(beta)  # the live topics: scored, their coherence and diversity
    report.row(model, *model.scorer().score(live, heldout), Quality.of(live, session.heldout_docs))


def _print_topics(model: StreamingLDA, vocabulary: Vocabulary, stream: TextIO) -> None:
    for topic in topics_summary(model, vocabulary, TOP_WORDS_SHOWN):
        words = " ".join(w["word"] for w in topic["words"])
        print(f"topic {topic['id']:>3}: {words}", file=stream)
