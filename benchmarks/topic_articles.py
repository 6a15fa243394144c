"""Do the articles listed behind each topic belong to it, and what does keeping them cost?

One pass over DEV with the worker's learner (shipped defaults at ``--topics`` and
``--vocab-size``, a vocabulary from the first ``--vocab-docs`` articles, as the service builds
it), twice in lockstep from the same seed: one learner keeps the topics' record (the
documents' topic sums, sizes, word counts, the articles behind each topic), the other does
not; both draw the same chain, so their step times compare minibatch by minibatch
(interleaved). Then each listed article's own text is folded in with the served beta_mean by
``/infer``'s fixed point (lda.inference.infer_topics), and the script prints, per topic, the
share of the topic it was listed under: the median over topics, and the fraction of listed
articles whose topic is among their top 3; and the listed articles' lengths in words against
the stream's (median, and the share under 100 words).

    .venv/bin/python -m benchmarks.topic_articles --topics 200 --vocab-size 50000 --docs 20000
    .venv/bin/python -m benchmarks.topic_articles --docs 5000          # shipped K = 50
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import mwparserfromhell
import torch

from lda.batch import Batch
from lda.inference import infer_topics
from lda.model import StreamingLDA
from lda.vocab import Vocabulary, build_vocabulary
from service.learn.publisher import suggested_names_of as suggested
from service.learn.topic_record import RecordConfig, TopicRecord
from service.settings import Settings
from service.store.snapshot import Snapshot, ranked_words

SHORT_WORDS = 100  # an article under this many words is a stub
CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"


def articles(corpora: Path) -> Iterator[tuple[str, str, str]]:
    """(id, title, plain text) of the DEV articles in order."""
    for path in sorted(corpora.glob("dev-*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for n, line in enumerate(lines):
                if not line.strip():
                    continue
                record = json.loads(line)
                text = record.get("text") or ""
                if record.get("format") == "wikitext":
                    text = str(mwparserfromhell.parse(text).strip_code())
                yield f"{path.name}:{n}", str(record.get("title", "")), text


def snapshot_cost(model: StreamingLDA, vocabulary: Vocabulary, record: TopicRecord) -> None:
    """The snapshot's size and the time to make and render it, without and with the record's
    fields (median of 5)."""
    ids, weights = model.top_words(100)
    vocab = vocabulary.words
    base = Snapshot(
        docs_seen=model.docs_seen,
        updated_at=time.time(),
        sampler=model.config.sampler,
        step_size=model.step_size,
        device="cpu",
        vocab_size=len(vocab),
        topics=ranked_words((weights, ids), vocab),
        sample_topics=ranked_words((weights, ids), vocab),
    )
    tf = record.tally.term_frequency

    def render(with_record: bool) -> tuple[int, float]:
        began = time.perf_counter()
        snapshot = base
        if with_record:
            snapshot = replace(
                base,
                topic_size=record.sizes(),
                topic_articles=record.article_rows(model.docs_seen),
                topic_suggested=suggested(ids, weights, tf, vocabulary),
            )
        return len(snapshot.to_json().encode()), time.perf_counter() - began

    for with_record in (False, True):
        runs = [render(with_record) for _ in range(5)]
        size, took = runs[0][0], statistics.median(t for _, t in runs)
        which = "with the record's fields" if with_record else "without them"
        print(f"snapshot {which}: {size / 1024:.0f} KiB, made and rendered in {took * 1e3:.1f} ms")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--topics", type=int, default=50)
    p.add_argument("--vocab-size", type=int, default=50_000)
    p.add_argument("--vocab-docs", type=int, default=2_000)
    p.add_argument("--heldout", type=int, default=1_000, help="first articles skipped, as held out")
    p.add_argument("--docs", type=int, default=20_000, help="articles learned after them")
    p.add_argument("--keep", type=int, default=10, help="articles kept per topic")
    p.add_argument("--corpora", type=Path, default=CORPORA)
    args = p.parse_args()
    torch.set_num_threads(1)

    settings = Settings.model_validate({"topics": args.topics})  # not STREAMLDA_*
    texts: dict[str, tuple[str, str]] = {}
    stream = articles(args.corpora)
    first = [next(stream) for _ in range(args.vocab_docs)]
    vocab = build_vocabulary((t for _, _, t in first), args.vocab_size)
    documents: list[tuple[tuple[str, str, str], list[int]]] = []
    for article_id, title, text in [*first, *stream]:
        ids = vocab.encode(text)
        if ids:
            documents.append(((title, article_id, "dev"), ids))
            texts[article_id] = (title, text)
        if len(documents) >= args.heldout + args.docs:
            break
    documents = documents[args.heldout :]
    if len(documents) < args.docs:
        print(f"warning: DEV ran out at {len(documents)} articles", file=sys.stderr)

    config = settings.model.learner_config(len(vocab))
    with_record, without = StreamingLDA(config, seed=0), StreamingLDA(config, seed=0)
    defaults = Settings.model_construct()
    record = TopicRecord(
        RecordConfig(args.keep, defaults.publish.topic_half_life, defaults.publish.export_docs, 0),
        args.topics,
        len(vocab),
    )
    size = settings.model.batch_size or 64
    # Compiled kernels are compiled (or loaded from numba's cache) on first use: a throwaway
    # learner takes a minibatch both ways first, so neither timed learner pays for it.
    warm = Batch.from_ids([ids for _, ids in documents[:size]])
    StreamingLDA(config, seed=1).update(warm, documents=lambda counts: None)
    StreamingLDA(config, seed=1).update(warm)
    seconds = {"on": 0.0, "off": 0.0}
    started = time.perf_counter()
    for start in range(0, len(documents), size):
        part = documents[start : start + size]
        batch = Batch.from_ids([ids for _, ids in part])
        for which in ("off", "on") if (start // size) % 2 else ("on", "off"):
            began = time.perf_counter()
            if which == "on":
                counts: list[torch.Tensor] = []
                with_record.update(batch, documents=counts.append)
                record.learned(batch.words, counts[0], [a for a, _ in part], with_record.docs_seen)
            else:
                without.update(batch)
            seconds[which] += time.perf_counter() - began
    assert torch.equal(with_record.beta, without.beta), "the record changed the chain"
    n = len(documents)
    print(
        f"K={args.topics} W={len(vocab)} {n} articles in {time.perf_counter() - started:.0f} s | "
        f"docs/s with the record {n / seconds['on']:.1f}, without {n / seconds['off']:.1f}, "
        f"ratio {seconds['off'] / seconds['on']:.3f}"
    )

    snapshot_cost(with_record, vocab, record)

    beta = with_record.beta_mean
    gamma = config.gamma
    assert gamma is not None
    shares, in_top3, listed = [], 0, 0
    listed_words: list[int] = []
    for k, rows in enumerate(record.article_rows(with_record.docs_seen)):
        topic_shares = []
        for row in rows:
            listed_words.append(len(texts[str(row[1])][1].split()))
            ids = torch.tensor(vocab.encode(texts[str(row[1])][1]))
            pi = torch.tensor(infer_topics(beta, ids, gamma))
            topic_shares.append(float(pi[k]))
            in_top3 += int(k in torch.topk(pi, 3).indices.tolist())
            listed += 1
        if topic_shares:
            shares.append(statistics.mean(topic_shares))
    print(
        f"listed {listed} articles over {len(shares)} topics | /infer's share of the listed "
        f"topic: median over topics {statistics.median(shares):.3f} | topic among the "
        f"article's top 3: {in_top3 / max(listed, 1):.3f} (goal >= 0.90)"
    )
    learned_words = [len(texts[a[1]][1].split()) for a, _ in documents]
    stream_median, listed_median = statistics.median(learned_words), statistics.median(listed_words)
    short = sum(w < SHORT_WORDS for w in listed_words) / max(len(listed_words), 1)
    stream_short = sum(w < SHORT_WORDS for w in learned_words) / len(learned_words)
    print(
        f"lengths in words: listed median {listed_median:.1f} against the stream's "
        f"{stream_median:.1f} ({listed_median / stream_median:.2f}x, goal >= 0.8x) | under "
        f"{SHORT_WORDS} words: listed {short:.1%}, stream {stream_short:.1%} (goal: at most "
        f"the stream's)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
