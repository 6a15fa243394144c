"""Open vocabulary benchmark: a stream's refreshed vocabulary against a frozen and a counted one.

The learning session counts the stream's words (:class:`lda.word_counts.WordCounts`) and, every
``vocab_refresh`` documents learned, moves to the top ``vocab_size`` words of the counts
(docs/model.md, "When the vocabulary changes"). This script runs, in one process, on the same
articles and the same held-out texts, with the one estimator of ``benchmarks/learner.py``:

* **open**: the session as shipped (first vocabulary from its first ``--vocab-docs`` texts,
  refreshed every ``--refresh`` documents);
* **frozen**: the same with ``vocab_refresh = 0`` (today's frozen first vocabulary);
* **counted**: a vocabulary counted over all the run's articles in advance (held-out and
  training), given to the session and never refreshed;
* **tomotopy-50**: tomotopy's batch collapsed Gibbs, 50 iterations, on the training articles
  encoded in the open run's final vocabulary (``benchmarks/peers.py``'s adapters).

The held-out set is the same texts for every system: the sessions hold out nothing
(``heldout = 0``) and never see them. Default stream: the first ``--heldout`` DEV articles held
out, the next ``--docs`` trained on, in file order. ``--changing``: ``--older`` articles whose
page id is below 18,000,000, then ``--docs`` - ``--older`` recent ones (page id 18,000,000 and
up), held-out = the first ``--heldout`` recent articles (never trained on).

Scores (of ``beta_mean``; tomotopy's beta): **own**, the held-out texts encoded in each system's
vocabulary, with its **coverage** (the share of all held-out tokens, every token
``lda.tokens.words`` finds, in the vocabulary); **shared**, the words every system holds (S):
each beta restricted to S's columns and renormalised, scored on the held-out texts encoded in
S (the same test tokens for all); NPMI of the top 10 words in the held-out documents beside
each. Cost: the wall seconds of each session's whole loop (encoding, counting, refreshes and
steps) and docs/s, the refreshes and the seconds inside ``session.refresh()``.

    .venv/bin/python -m benchmarks.open_vocab                 # W = 50,000, K = 200, 29k
    .venv/bin/python -m benchmarks.open_vocab --changing      # older then recent articles
    .venv/bin/python -m benchmarks.open_vocab --docs 3000 --heldout 200 --vocab-size 5000 \\
        --topics 20 --refresh 2500                            # smoke run, under a minute
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from benchmarks import peers
from benchmarks.common import CORPORA, read_texts, set_threads
from benchmarks.scorer import Scorer
from lda.batch import Batch
from lda.evaluation.perplexity import HeldoutSet
from lda.model import StreamingLDA, resolve_device
from lda.tokens import words
from lda.vocab import Vocabulary, build_vocabulary
from service.learn.session import LearningSession
from service.settings import Settings
from service.settings_learning import ModelSettings

RECENT_ID = 18_000_000  # page ids from here on are "recent" (created 2008 and later)
WATCHED = ("josé", "łódź", "kraków")  # non-ASCII words the open vocabulary should reach
# Done-when goals: open / frozen coverage (DEV, changing stream), shared perplexity ratio and
# the NPMI difference.
GOAL_COVERAGE = {"dev": 1.02, "changing": 1.03}
GOAL_SHARED_PPL = 1.02
GOAL_NPMI = -0.01


@dataclass
class Stream:
    """The held-out texts, the training texts in stream order, and how they were chosen."""

    name: str  # dev or changing
    heldout: list[str]
    train: list[str]
    notes: list[str] = field(default_factory=list)


@dataclass
class System:
    """One learned model: its vocabulary, its served topics and what learning it cost."""

    name: str
    vocabulary: Vocabulary
    beta: torch.Tensor  # K x W, rows sum to 1, on the CPU
    wall_s: float  # the whole loop (streamlda) or add_doc + training (tomotopy)
    docs: int  # documents learned
    tokens: int
    empty: int = 0  # documents with no vocabulary word when placed
    refreshes: int = 0  # refreshes due
    changes: int = 0  # refreshes that changed the words
    refresh_s: float = 0.0  # inside session.refresh()
    learner_s: float = 0.0  # inside StreamingLDA.update
    first: Vocabulary | None = None  # the open run's first vocabulary


# ---- data -----------------------------------------------------------------------------------


def page_ids(files: Sequence[Path]) -> Iterator[int]:
    """The page id of each article, in :func:`read_texts`' order (-1 where none)."""
    for path in files:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for line in lines:
                if not line.strip():
                    continue
                try:
                    yield int(json.loads(line).get("id"))
                except (TypeError, ValueError):
                    yield -1


def dev_stream(args: argparse.Namespace) -> Stream:
    """The first ``--heldout`` articles held out, the next ``--docs`` trained on."""
    _, texts = read_texts(args.corpus_dir)
    heldout = list(itertools.islice(texts, args.heldout))
    train = list(itertools.islice(texts, args.docs))
    notes = [f"DEV: {len(heldout)} held-out articles, then {len(train)} training articles"]
    if len(train) < args.docs:
        notes.append(f"the corpus ran out: {len(train)} training articles, not {args.docs}")
    return Stream("dev", heldout, train, notes)


def changing_stream(args: argparse.Namespace) -> Stream:
    """``--older`` older articles then recent ones, ``--docs`` in all; held-out = the first
    ``--heldout`` recent articles (never trained on)."""
    files, texts = read_texts(args.corpus_dir)
    older: list[str] = []
    recent: list[str] = []
    for page, text in zip(page_ids(files), texts, strict=True):
        (recent if page >= RECENT_ID else older).append(text)
    want_recent = args.docs - args.older
    notes = [
        f"DEV holds {len(older)} older articles (page id < {RECENT_ID:,}) and {len(recent)} "
        f"recent ones (>= {RECENT_ID:,})"
    ]
    heldout = recent[: args.heldout]
    train_older = older[: args.older]
    train_recent = recent[args.heldout : args.heldout + want_recent]
    if len(train_older) < args.older:
        notes.append(f"only {len(train_older)} older articles to stream, not {args.older}")
    if len(train_recent) < want_recent:
        notes.append(
            f"only {len(train_recent)} recent articles left after the {len(heldout)} held out, "
            f"not {want_recent}: the stream takes what there is"
        )
    notes.append(
        f"changing stream: {len(train_older)} older then {len(train_recent)} recent articles; "
        f"{len(heldout)} recent articles held out"
    )
    return Stream("changing", heldout, train_older + train_recent, notes)


# ---- systems --------------------------------------------------------------------------------


def session_config(args: argparse.Namespace, refresh: int) -> ModelSettings:
    """The shipped settings but the run's sizes; the session holds nothing out."""
    overrides: dict[str, Any] = {
        "topics": args.topics,
        "vocab_size": args.vocab_size,
        "vocab_docs": args.vocab_docs,
        "vocab_refresh": refresh,
        "heldout": 0,
        "seed": args.seed,
        "batch_size": args.batch_size,
        "fixed_topics": True,  # the refreshes' cost at a fixed K, as the peers have
    }
    return Settings(**overrides).model  # validated, as the commands build it


def warm_up(args: argparse.Namespace, vocabulary: Vocabulary, texts: Sequence[str]) -> float:
    """One step and one remap of a throwaway learner, so no system pays for loading compiled
    kernels."""
    start = time.perf_counter()
    config = session_config(args, 0).learner_config(len(vocabulary))
    documents = [ids for ids in map(vocabulary.encode, texts[: args.batch_size]) if ids]
    model = StreamingLDA(config, args.torch_device, args.seed + 999)
    if documents:
        model.update(Batch.from_ids(documents))
    keep = torch.arange(len(vocabulary))
    keep[-1] = -1  # one word leaves, one enters: the remap's kernels are loaded too
    model.remap_vocabulary(keep)
    return time.perf_counter() - start


def run_session(
    name: str,
    args: argparse.Namespace,
    texts: Sequence[str],
    refresh: int,
    vocabulary: Vocabulary | None = None,
) -> System:
    """Offer every text to a session as ``streamlda train`` does, learning each minibatch and
    refreshing when due; the whole loop is timed, ``session.refresh()`` apart too."""
    session: LearningSession[None] = LearningSession(
        session_config(args, refresh), args.torch_device
    )
    batch_size = session.config.batch_size
    empty, due, changes, refresh_s = 0, 0, 0, 0.0
    first: Vocabulary | None = None
    start = time.perf_counter()
    if vocabulary is not None:
        session.begin(vocabulary)
    for text in itertools.chain(texts, [None]):
        ended = text is None
        placed = session.flush() if text is None else session.offer([(None, text)])
        empty += sum(p.kind == "empty" for p in placed)
        if session.model is None:
            continue
        if first is None:
            first = session.vocabulary
        while len(session.buffer) >= batch_size or (ended and session.buffer):
            _, batch = session.take()
            session.learn(batch)
            if session.refresh_due():
                due += 1
                began = time.perf_counter()
                keep = session.refresh()
                refresh_s += time.perf_counter() - began
                changes += keep is not None
                empty += len(session.take_emptied())
                if keep is not None:
                    print(
                        f"  {name}: refresh at {session.model.docs_seen} documents: "
                        f"{int((keep < 0).sum())} words entered "
                        f"({time.perf_counter() - began:.1f} s)",
                        file=sys.stderr,
                        flush=True,
                    )
    wall = time.perf_counter() - start
    model, final = session.model, session.vocabulary
    assert model is not None and final is not None
    system = System(
        name=name,
        vocabulary=final,
        beta=model.beta_mean.detach().to("cpu", torch.float64),
        wall_s=wall,
        docs=model.docs_seen,
        tokens=model.tokens_seen,
        empty=empty,
        refreshes=due,
        changes=changes,
        refresh_s=refresh_s,
        learner_s=session.busy_s,
        first=first,
    )
    print(
        f"  {name}: {system.docs} documents in {wall:.1f} s ({system.docs / wall:.1f} docs/s; "
        f"learner {system.learner_s:.1f} s), W = {len(final)}",
        file=sys.stderr,
        flush=True,
    )
    return system


def run_tomotopy(args: argparse.Namespace, texts: Sequence[str], vocabulary: Vocabulary) -> System:
    """tomotopy's LDA, ``--tomotopy-iters`` iterations, on ``texts`` encoded in
    ``vocabulary`` (those with no word of it left out), as learner.py runs it."""
    documents = [ids for ids in map(vocabulary.encode, texts) if ids]
    start = time.perf_counter()
    model = peers.tomotopy_lda(documents, vocabulary.words, args.topics, args.seed)
    peers.tomotopy_train(model, 0, args.threads)  # initialisation
    prep = time.perf_counter() - start
    peers.tomotopy_train(model, args.tomotopy_iters, args.threads)
    wall = time.perf_counter() - start
    beta = peers.tomotopy_beta(model, vocabulary.index, len(vocabulary))
    name = f"tomotopy-{args.tomotopy_iters}"
    print(
        f"  {name}: {len(documents)} documents, {wall:.1f} s ({prep:.1f} s add_doc + init)",
        file=sys.stderr,
        flush=True,
    )
    return System(
        name=name,
        vocabulary=vocabulary,
        beta=beta,
        wall_s=wall,
        docs=len(documents),
        tokens=sum(map(len, documents)),
        empty=len(texts) - len(documents),
        learner_s=wall - prep,
    )


# ---- scoring --------------------------------------------------------------------------------


@dataclass
class Scores:
    """One system's figures on the held-out texts."""

    coverage: float
    test_tokens: int  # in its own vocabulary
    ppl_own: float
    npmi_own: float | None
    ppl_shared: float
    npmi_shared: float | None


def _scorer(args: argparse.Namespace, vocabulary: Vocabulary, texts: Sequence[str]) -> Any:
    """The learner benchmark's Scorer on ``texts`` encoded in ``vocabulary`` (those with no
    word of it left out), NPMI counted in the same documents."""
    documents = [ids for ids in map(vocabulary.encode, texts) if ids]
    heldout = HeldoutSet.from_documents(documents)
    return Scorer(
        heldout, args.eval_gamma, args.eval_sweeps, "exact", args.seed, reference=documents
    )


def shared_words(systems: Sequence[System]) -> list[str]:
    """The words every system's vocabulary holds, in the first system's order."""
    common = set.intersection(*(set(s.vocabulary.words) for s in systems))
    return [w for w in systems[0].vocabulary.words if w in common]


def score(
    args: argparse.Namespace, systems: Sequence[System], texts: Sequence[str]
) -> tuple[dict[str, Scores], int, int]:
    """Every system's scores; S's size and its test tokens."""
    total = sum(len(words(text).split()) for text in texts)  # every token, in or out
    shared = Vocabulary(shared_words(systems))
    shared_scorer = _scorer(args, shared, texts)
    own_scorers: dict[tuple[str, ...], Any] = {}
    results: dict[str, Scores] = {}
    for system in systems:
        vocabulary = system.vocabulary
        key = tuple(vocabulary.words)
        if key not in own_scorers:
            own_scorers[key] = _scorer(args, vocabulary, texts)
        own = own_scorers[key]
        covered = sum(len(vocabulary.encode(text)) for text in texts)
        start = time.perf_counter()
        ppl_own, _ = own.score_common(system.name, system.beta, 0)
        columns = torch.tensor([vocabulary.index[w] for w in shared.words], dtype=torch.int64)
        restricted = system.beta[:, columns]
        restricted = restricted / restricted.sum(dim=1, keepdim=True)
        ppl_shared, _ = shared_scorer.score_common(system.name, restricted, 0)
        results[system.name] = Scores(
            coverage=covered / max(total, 1),
            test_tokens=own.heldout.n_test_tokens,
            ppl_own=ppl_own,
            npmi_own=own.npmi(system.beta),
            ppl_shared=ppl_shared,
            npmi_shared=shared_scorer.npmi(restricted),
        )
        print(
            f"  scored {system.name} in {time.perf_counter() - start:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    return results, len(shared), shared_scorer.heldout.n_test_tokens


# ---- output ---------------------------------------------------------------------------------


def _cell(value: float | None, width: int, digits: int) -> str:
    if value is None or not math.isfinite(value):
        return f"{'-':>{width}s}"
    return f"{value:{width}.{digits}f}"


def format_table(systems: Sequence[System], scores: dict[str, Scores]) -> str:
    """System x (vocabulary, own and shared scores, cost)."""
    lines = [
        f"{'system':12s} {'W':>7s} {'coverage':>8s} {'test tok':>8s} {'ppl own':>9s} "
        f"{'NPMI own':>8s} {'ppl S':>9s} {'NPMI S':>7s} {'docs':>6s} {'wall s':>7s} "
        f"{'docs/s':>7s} {'learn s':>7s} {'refr':>4s} {'chg':>3s} {'refr s':>6s}"
    ]
    for s in systems:
        r = scores[s.name]
        streaming = not s.name.startswith("tomotopy")
        lines.append(
            f"{s.name:12s} {len(s.vocabulary):7d} {r.coverage:8.4f} {r.test_tokens:8d} "
            f"{_cell(r.ppl_own, 9, 1)} {_cell(r.npmi_own, 8, 3)} {_cell(r.ppl_shared, 9, 1)} "
            f"{_cell(r.npmi_shared, 7, 3)} {s.docs:6d} {s.wall_s:7.1f} "
            f"{_cell(s.docs / s.wall_s if streaming else None, 7, 1)} {s.learner_s:7.1f} "
            f"{s.refreshes if streaming else '-':>4} {s.changes if streaming else '-':>3} "
            f"{_cell(s.refresh_s if streaming else None, 6, 1)}"
        )
    return "\n".join(lines)


def goals(stream: str, systems: Sequence[System], scores: dict[str, Scores]) -> dict[str, Any]:
    """The done-when conditions: open against frozen, and open against tomotopy."""
    by_name = {s.name: s for s in systems}
    open_, frozen = scores["open"], scores["frozen"]
    out: dict[str, Any] = {
        "coverage_ratio": open_.coverage / frozen.coverage,
        "coverage_goal": GOAL_COVERAGE[stream],
        "shared_ppl_ratio": open_.ppl_shared / frozen.ppl_shared,
        "shared_ppl_goal": GOAL_SHARED_PPL,
        "npmi_diff": None
        if open_.npmi_own is None or frozen.npmi_own is None
        else open_.npmi_own - frozen.npmi_own,
        "npmi_goal": GOAL_NPMI,
        "docs_per_s_ratio": (by_name["open"].docs / by_name["open"].wall_s)
        / (by_name["frozen"].docs / by_name["frozen"].wall_s),
    }
    out["coverage_met"] = out["coverage_ratio"] >= out["coverage_goal"]
    out["shared_ppl_met"] = out["shared_ppl_ratio"] <= out["shared_ppl_goal"]
    out["npmi_met"] = out["npmi_diff"] is not None and out["npmi_diff"] >= GOAL_NPMI
    tomotopy = next((s for s in systems if s.name.startswith("tomotopy")), None)
    if tomotopy is not None:
        peer = scores[tomotopy.name]
        out["tomotopy"] = tomotopy.name
        out["own_ppl_ratio_tomotopy"] = open_.ppl_own / peer.ppl_own
        out["npmi_diff_tomotopy"] = (
            None
            if open_.npmi_own is None or peer.npmi_own is None
            else open_.npmi_own - peer.npmi_own
        )
        out["beats_tomotopy"] = open_.ppl_own < peer.ppl_own and (
            out["npmi_diff_tomotopy"] is not None and out["npmi_diff_tomotopy"] > 0
        )
    return out


def format_goals(summary: dict[str, Any]) -> str:
    def met(flag: bool) -> str:
        return "met" if flag else "NOT met"

    npmi = summary["npmi_diff"]
    lines = [
        f"coverage open / frozen: {summary['coverage_ratio']:.4f} "
        f"(goal >= {summary['coverage_goal']:.2f}: {met(summary['coverage_met'])})",
        f"shared perplexity open / frozen: {summary['shared_ppl_ratio']:.4f} "
        f"(goal <= {summary['shared_ppl_goal']:.2f}: {met(summary['shared_ppl_met'])})",
        f"NPMI open - frozen: {_cell(npmi, 0, 4).strip()} "
        f"(goal >= {GOAL_NPMI:+.2f}: {met(summary['npmi_met'])})",
        f"docs/s open / frozen (the cost of counting and refreshing): "
        f"{summary['docs_per_s_ratio']:.3f}",
    ]
    if "tomotopy" in summary:
        diff = summary["npmi_diff_tomotopy"]
        lines.append(
            f"open against {summary['tomotopy']} (own perplexity, same vocabulary): "
            f"ppl ratio {summary['own_ppl_ratio_tomotopy']:.4f}, NPMI "
            f"{_cell(diff, 0, 4).strip()}: open beats it on both: "
            f"{'yes' if summary['beats_tomotopy'] else 'no'}"
        )
    return "\n".join(lines)


# ---- main -----------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--corpus-dir", type=Path, default=CORPORA)
    p.add_argument("--changing", action="store_true", help="older articles, then recent ones")
    p.add_argument("--older", type=int, default=10_000, help="--changing: older articles first")
    p.add_argument("--docs", type=int, default=29_000, help="training articles (the stream)")
    p.add_argument("--heldout", type=int, default=1_000, help="held-out articles")
    p.add_argument("--vocab-size", type=int, default=50_000, help="W")
    p.add_argument(
        "--vocab-docs", type=int, default=ModelSettings.model_fields["vocab_docs"].default
    )
    p.add_argument(
        "--refresh",
        type=int,
        default=ModelSettings.model_fields["vocab_refresh"].default,
        help="the open run's vocab_refresh (documents between refreshes)",
    )
    p.add_argument("--topics", type=int, default=200, help="K")
    p.add_argument(
        "--batch-size", type=int, default=ModelSettings.model_fields["batch_size"].default
    )
    p.add_argument("--tomotopy", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--tomotopy-iters", type=int, default=50)
    p.add_argument("--eval-gamma", type=float, default=0.01, help="the estimator's prior")
    p.add_argument("--eval-sweeps", type=int, default=50)
    p.add_argument("--threads", type=int, default=2, help="torch, numba and tomotopy threads")
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if min(args.docs, args.heldout, args.vocab_size, args.topics, args.batch_size) < 1:
        p.error("--docs, --heldout, --vocab-size, --topics and --batch-size must be positive")
    if args.refresh < 1:
        p.error("--refresh must be positive (the frozen system is the one without refreshes)")
    if args.changing and not 0 < args.older < args.docs:
        p.error("--older must be positive and below --docs")
    args.torch_device = resolve_device(args.device)
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    set_threads(args.threads)
    start = time.perf_counter()
    stream = changing_stream(args) if args.changing else dev_stream(args)
    for note in stream.notes:
        print(note)
    counted_over = stream.heldout + stream.train
    counted_vocabulary = build_vocabulary(counted_over, args.vocab_size)
    prep_s = time.perf_counter() - start
    warm_s = warm_up(args, counted_vocabulary, stream.train)
    print(
        f"prepared in {prep_s:.1f} s (reading; the counted vocabulary over "
        f"{len(counted_over)} articles); warm-up {warm_s:.1f} s",
        file=sys.stderr,
    )
    systems = [
        run_session("open", args, stream.train, args.refresh),
        run_session("frozen", args, stream.train, 0),
        run_session("counted", args, stream.train, 0, counted_vocabulary),
    ]
    open_run = systems[0]
    if args.tomotopy:
        systems.append(run_tomotopy(args, stream.train, open_run.vocabulary))
    scores, n_shared, shared_tokens = score(args, systems, stream.heldout)

    first = open_run.first
    assert first is not None
    final_words, first_words = set(open_run.vocabulary.words), set(first.words)
    frozen_same = systems[1].vocabulary.words == first.words
    header = (
        f"{stream.name}: K = {args.topics}, W = {args.vocab_size}, {len(stream.train)} training "
        f"articles, {len(stream.heldout)} held-out articles; SCIR shipped defaults, minibatch "
        f"{args.batch_size}, threads {args.threads}; open: first vocabulary from "
        f"{args.vocab_docs} articles, refreshed every {args.refresh}; estimator: "
        f"{args.eval_sweeps} exact sweeps, uniform start, gamma {args.eval_gamma:g}"
    )
    print()
    print(header)
    print(format_table(systems, scores))
    print(
        f"S (words every system holds): {n_shared} words, {shared_tokens} test tokens; "
        f"open's final vocabulary: {len(final_words - first_words)} words entered and "
        f"{len(first_words - final_words)} left since its first (version "
        f"{open_run.vocabulary.version}); frozen's vocabulary is open's first: {frozen_same}"
    )
    watched = {w: {s.name: w in s.vocabulary.index for s in systems[:3]} for w in WATCHED}
    print(
        "in the vocabulary (open / frozen / counted): "
        + ", ".join(
            f"{w} {'/'.join('yes' if here else 'no' for here in found.values())}"
            for w, found in watched.items()
        )
    )
    summary = goals(stream.name, systems, scores)
    print(format_goals(summary))
    result: dict[str, Any] = {
        "benchmark": "open_vocab",
        "stream": stream.name,
        "notes": stream.notes,
        "command": " ".join(sys.argv) if argv is None else " ".join(argv),
        "settings": {
            k: str(v) if isinstance(v, Path | torch.device) else v for k, v in vars(args).items()
        },
        "heldout_articles": len(stream.heldout),
        "train_articles": len(stream.train),
        "shared_words": n_shared,
        "shared_test_tokens": shared_tokens,
        "open_entered": len(final_words - first_words),
        "open_left": len(first_words - final_words),
        "watched_words": watched,
        "systems": [
            {
                "name": s.name,
                "words": len(s.vocabulary),
                **{k: _json_number(v) for k, v in vars(scores[s.name]).items()},
                "docs": s.docs,
                "tokens": s.tokens,
                "empty": s.empty,
                "wall_s": round(s.wall_s, 2),
                "docs_per_s": round(s.docs / s.wall_s, 2),
                "learner_s": round(s.learner_s, 2),
                "refreshes": s.refreshes,
                "changes": s.changes,
                "refresh_s": round(s.refresh_s, 2),
            }
            for s in systems
        ],
        "goals": {k: _json_number(v) for k, v in summary.items()},
    }
    print(json.dumps(result))
    return result


def _json_number(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 5) if math.isfinite(value) else None
    return value


if __name__ == "__main__":
    main()
