"""Search over the kept articles: is an article found by half of its own text, how stale are the
kept shares, and how fast do the search routes answer beside the dashboards' load?

**Quality** (in process, per ``--topics``): the worker's learner (shipped defaults, a
vocabulary of ``--vocab-size`` words from the first 2,000 texts, as the service builds it)
learns ``--docs`` articles, DEV cycled under new ids past its 30,000. Each minibatch's Gibbs
expectations feed the worker's index (:class:`service.learn.search.index.ArticleIndex`, a
reservoir of ``--kept`` slots) as the worker's step feeds it; there are no revisits (the replay
pace: the stream is never quiet), so every share is the one learned when its article was fresh.
Then ``--queries`` kept articles are drawn (seeded); each one's first half (by words) is folded
in as ``POST /similar`` folds a text in (the published float32 beta_mean, the API's fixed point
and settings), and the kept articles are ranked by the API's own index
(:class:`service.api.search.index.SearchIndex`): the share of queries whose article is in the
top 10, and first. Beside it, the same queries against (a) every kept article refolded from its
whole text under the final model, kept sparse the same way (what the shares would be with no
staleness), and (b) a TF-IDF cosine over the kept texts (scikit-learn), in the same run.

**Staleness**: the mean L1 distance between a kept article's shares (its whole distribution,
the unkept mass spread) and a fresh fold-in of its whole text, for articles whose shares were
computed about 1,000, 10,000 and 50,000 articles before the end (the age-0 bin: the two
estimators' own difference, Gibbs expectations against the fold-in's fixed point).

**Latency** (``--latency``, at each ``--topics``): an embedded Redis holds the model, its index
and a snapshot; one API process serves them while ``--clients`` dashboards poll
``/topics`` and ``/perplexity`` (benchmarks/api_load.py's random open loop), and one client asks
each search route (and ``/infer``) in turn for ``--duration`` seconds: p50 / p95 of each.

    .venv/bin/python -m benchmarks.search --topics 50 200 --latency
    .venv/bin/python -m benchmarks.search --docs 5000 --kept 5000 --queries 200   # quick

Goals: found in the top 10 for >= 85% at K = 50 among 50,000 kept; p95 < 50 ms for
/topics/{id}/articles and /similar at K = 200 beside 200 pollers.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import itertools
import json
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from benchmarks.api_clients import Results, dashboard, percentiles
from benchmarks.api_load import start_api
from benchmarks.common import CORPORA, REPO
from benchmarks.infer_load import stop_api
from lda.batch import Batch
from lda.model import StreamingLDA
from lda.search import SHARES_KEPT, SparseRows, top_shares
from lda.tokens import WordIndex
from lda.vocab import Vocabulary, build_vocabulary
from service.api.infer.proportions import proportions, word_columns
from service.api.search.index import SearchIndex
from service.learn.entry_ref import EntryRef
from service.learn.reservoir import Reservoir
from service.learn.search.index import ArticleIndex
from service.learn.search.refold import ShareRefresh
from service.settings import Settings
from service.store.embedded_redis import EmbeddedRedis
from service.store.perplexity import PerplexityPoint, append_perplexity
from service.store.published_model import publish_model
from service.store.redis_client import connect
from service.store.search import IndexRows
from service.store.snapshot import Snapshot, publish_snapshot, top_words

VOCAB_DOCS = 2_000
SETTLE_S = 600.0  # the longest wait for the thread to catch up after the replay
AGES = {"1,000": (0, 2_000), "10,000": (8_000, 12_000), "50,000": (40_000, 10**12)}


@dataclass
class Learned:
    """One run's learner, its vocabulary, the index and each kept row's text."""

    model: StreamingLDA
    vocab: Vocabulary
    rows: IndexRows
    texts: dict[str, str]  # article id -> text
    seconds: float
    learned_at: dict[str, int]  # article id -> documents seen when it was learned
    at_end: IndexRows  # the rows as the replay ended (``rows``: once the thread caught up)
    settled_s: float  # how long the thread took to catch up after the replay


def dev_texts(corpora: Path) -> list[tuple[str, str]]:
    """(title, plain text) of every DEV article, in file order."""
    out = []
    for path in sorted(corpora.glob("dev-*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    record = json.loads(line)
                    out.append((str(record.get("title", "")), record.get("text") or ""))
    return out


def stream(articles: list[tuple[str, str]]) -> Iterator[tuple[str, str, str]]:
    """(id, title, text): DEV cycled, each pass's ids new."""
    for n in itertools.count():
        title, text = articles[n % len(articles)]
        yield f"{n}", title, text


def learn(args: argparse.Namespace, k: int, articles: list[tuple[str, str]]) -> Learned:
    """The worker's loop on the index's side: each minibatch's E[n_dk] into the index, a model
    published every ``eval_every`` documents (the refolding thread takes it up), no revisits."""
    settings = Settings.model_validate({"topics": k})  # not STREAMLDA_*
    vocab = build_vocabulary((t for _, t in articles[:VOCAB_DOCS]), args.vocab_size)
    model = StreamingLDA(settings.model.learner_config(len(vocab)), seed=0)
    index = ArticleIndex(args.kept, k)
    reservoir = Reservoir(None, "bench", args.kept, seed=0)  # its texts in memory
    refresh = ShareRefresh(index, reservoir.read, args.refresh_share)
    size = settings.model.batch_size or 100
    every = settings.model.eval_every
    gamma = model.config.gamma
    assert gamma is not None
    began, learned, published = time.perf_counter(), 0, 0
    learned_at: dict[str, int] = {}
    documents = stream(articles)
    while learned < args.docs:
        part = []
        while len(part) < size and learned + len(part) < args.docs:
            article_id, title, text = next(documents)
            ids = vocab.encode(text)
            if ids:
                ref = EntryRef(article_id, title, article_id, "dev")
                index.placed(ref, reservoir.offer(text))
                part.append((ref, ids))
                learned_at[article_id] = learned
        counts: list[torch.Tensor] = []
        model.update(Batch.from_ids([ids for _, ids in part]), documents=counts.append)
        index.learned([ref for ref, _ in part], counts[0], model.docs_seen)
        learned += len(part)
        if learned // every > published:
            published = learned // every
            refresh.model(
                model.beta_mean.to(torch.float32, copy=True), vocab, gamma, model.docs_seen
            )
            refresh.start()
    seconds = time.perf_counter() - began
    at_end, during = index.rows(), refresh.refolded
    # The stream has ended: the final model goes to the thread, which catches up while quiet.
    refresh.model(model.beta_mean.to(torch.float32, copy=True), vocab, gamma, model.docs_seen)
    settled = time.perf_counter()
    while args.refresh_share and index.due(1, model.docs_seen) and not settled_too_long(settled):
        time.sleep(0.5)
    settled_s = time.perf_counter() - settled
    refresh.close()
    print(
        f"K={k}: learned {learned:,} in {seconds:.0f} s, the thread refolding {during:,} rows "
        f"meanwhile (share {args.refresh_share}); then it refolded every row under the final "
        f"model in {settled_s:.0f} s",
        flush=True,
    )
    rows = index.rows()
    texts = reservoir.read(list(range(min(args.kept, learned))))
    by_id = {ref[1]: texts[s] for s, ref in enumerate(index.refs) if ref is not None and s in texts}
    kept = {ref[1] for ref in rows.refs}
    learned_at = {key: at for key, at in learned_at.items() if key in kept}
    return Learned(model, vocab, rows, by_id, seconds, learned_at, at_end, settled_s)


def settled_too_long(since: float) -> bool:
    return time.perf_counter() - since > SETTLE_S


def fold(learned: Learned, texts: list[str], settings: Settings) -> np.ndarray:
    """The texts' proportions as ``/infer`` and ``/similar`` fold them in."""
    beta = learned.model.beta_mean.detach().to("cpu", torch.float32)
    columns = word_columns(beta.T.contiguous().T.numpy())
    ids, starts, _ = WordIndex(learned.vocab.words).encode(texts)
    gamma = learned.model.config.gamma
    assert gamma is not None
    return proportions(
        columns, ids, starts, gamma,
        iterations=settings.api.infer_iterations, tolerance=settings.api.infer_tolerance,
    )  # fmt: skip


def found(index: SearchIndex, queries: np.ndarray, wanted: list[str]) -> tuple[float, float]:
    """(share found in the top 10, share found first)."""
    top10 = first = 0
    for query, article_id in zip(queries, wanted, strict=True):
        ids = [index.rows.refs[f.row][1] for f in index.nearest(index.distances(query), 10)]
        top10 += article_id in ids
        first += bool(ids) and ids[0] == article_id
    return top10 / len(wanted), first / len(wanted)


def tfidf_found(texts: dict[str, str], halves: list[str], wanted: list[str]) -> float:
    """Share of the halves whose article is in the top 10 by TF-IDF cosine."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    keys = list(texts)
    vectorizer = TfidfVectorizer(sublinear_tf=True, min_df=2, stop_words="english")
    matrix = vectorizer.fit_transform([texts[key] for key in keys])
    scores = (vectorizer.transform(halves) @ matrix.T).toarray()
    top = np.argsort(-scores, axis=1, kind="stable")[:, :10]
    return float(np.mean([w in {keys[i] for i in row} for w, row in zip(wanted, top, strict=True)]))


def dense(rows: SparseRows) -> np.ndarray:
    return np.stack([rows.dense(i) for i in range(rows.topics.shape[0])])


def quality(args: argparse.Namespace, k: int, learned: Learned) -> None:
    settings = Settings.model_validate({"topics": k})
    index = SearchIndex(learned.rows)
    refs = index.rows.refs
    rng = random.Random(args.seed)
    picked = rng.sample(range(len(refs)), min(args.queries, len(refs)))
    wanted = [refs[i][1] for i in picked]
    halves = []
    for key in wanted:
        words = learned.texts[key].split()
        halves.append(" ".join(words[: max(1, len(words) // 2)]))
    queries = fold(learned, halves, settings)
    ended = SearchIndex(learned.at_end)
    assert ended.rows.refs == refs, "the rows at the end and after are of the same articles"
    end10, end1 = found(ended, queries, wanted)
    kept10, kept1 = found(index, queries, wanted)

    whole = fold(learned, [learned.texts[ref[1]] for ref in refs], settings)
    topics, shares, _ = top_shares(whole, SHARES_KEPT)
    refolded = SearchIndex(IndexRows(refs, topics, shares, index.rows.tokens, index.rows.at, k))
    fresh10, fresh1 = found(refolded, queries, wanted)
    tfidf10 = tfidf_found(learned.texts, halves, wanted)
    print(
        f"K={k}: {len(refs):,} kept articles after {learned.model.docs_seen:,} learned in "
        f"{learned.seconds:.0f} s | half text, {len(wanted)} queries, top-10 (first): kept shares "
        f"as the replay ended {end10:.1%} ({end1:.1%}), {learned.settled_s:.0f} s later "
        f"{kept10:.1%} ({kept1:.1%}) | every row refolded under the final model "
        f"{fresh10:.1%} ({fresh1:.1%}) | TF-IDF {tfidf10:.1%}",
        flush=True,
    )
    kept_dense = dense(ended.sparse)
    l1 = np.abs(kept_dense - whole).sum(axis=1)
    end = learned.model.docs_seen
    age = np.array([end - learned.learned_at[ref[1]] for ref in refs])
    shares_age = end - ended.rows.at
    parts = []
    for name, (low, high) in AGES.items():
        mask = (age >= low) & (age < high)
        if mask.any():
            parts.append(
                f"learned ~{name} ago: {l1[mask].mean():.3f} (n={int(mask.sum())}, shares "
                f"{np.median(shares_age[mask]):,.0f} documents old, median)"
            )
    print(f"K={k}: staleness, mean L1 kept vs fresh fold-in: " + ", ".join(parts), flush=True)


def publish_all(url: str, learned: Learned) -> None:
    """The model with its index, a snapshot and a perplexity point, as the worker leaves them."""
    client = connect(url)
    beta = learned.model.beta_mean.detach().to("cpu", torch.float32)
    words = learned.vocab.words
    now = time.time()
    publish_snapshot(
        client,
        Snapshot(
            docs_seen=learned.model.docs_seen, updated_at=now, sampler="scir", step_size=0.0,
            device="cpu", vocab_size=len(words), topics=top_words(beta, words, 100),
            sample_topics=top_words(learned.model.beta.float(), words, 100), docs_per_s=0.0,
            tokens_per_s=0.0, counters={"updates": 1},
        ),
    )  # fmt: skip
    append_perplexity(
        client, PerplexityPoint(learned.model.docs_seen, 2000.0, 2000.0, now), keep=100
    )
    publish_model(
        client, beta, words, docs_seen=learned.model.docs_seen,
        gamma=float(learned.model.config.gamma or 0.03), index=learned.rows,
    )  # fmt: skip
    client.close()


async def measured(port: int, learned: Learned, duration: float, seed: int) -> dict[str, list]:
    """Each search route and /infer in turn, one request at a time, for ``duration`` s."""
    import httpx

    rng = random.Random(seed)
    keys = [ref[1] for ref in learned.rows.refs]
    texts = list(learned.texts.values())
    k = learned.rows.n_topics
    out: dict[str, list[float]] = {"articles": [], "similar": [], "article": [], "infer": []}
    errors = 0
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        end = time.perf_counter() + duration
        while time.perf_counter() < end:
            text = " ".join(rng.choice(texts).split()[:300])
            for name in out:
                began = time.perf_counter()
                if name == "articles":
                    offset = 10 * rng.randrange(5)
                    r = await client.get(f"/topics/{rng.randrange(k)}/articles?offset={offset}")
                elif name == "similar":
                    r = await client.post("/similar", json={"text": text, "limit": 10})
                elif name == "article":
                    r = await client.get(f"/articles/{rng.choice(keys)}/similar")
                else:
                    r = await client.post("/infer", json={"text": text})
                out[name].append((time.perf_counter() - began) * 1000)
                errors += r.status_code != 200
    if errors:
        print(f"warning: {errors} answers were not 200", file=sys.stderr)
    return out


async def under_load(port: int, learned: Learned, args: argparse.Namespace) -> None:
    results = Results()
    pollers = [
        dashboard("127.0.0.1", port, args.duration + 2, results, False, "random")
        for _ in range(args.clients)
    ]
    await asyncio.sleep(0)
    load = asyncio.gather(*pollers)
    await asyncio.sleep(1.0)  # the pollers are under way
    searched = await measured(port, learned, args.duration, args.seed)
    await load
    k = learned.rows.n_topics
    print(
        f"K={k}, {len(learned.rows.refs):,} kept, {args.clients} dashboards polling /topics and "
        f"/perplexity ({results.answered:,} answers, errors {results.errors or 0}): "
        f"{percentiles(results.latencies_ms)}",
        flush=True,
    )
    for name, values in searched.items():
        route = {
            "articles": "GET /topics/{id}/articles",
            "similar": "POST /similar",
            "article": "GET /articles/{id}/similar",
            "infer": "POST /infer",
        }[name]
        p50, p95 = np.percentile(values, [50, 95])
        print(f"  {route}: p50 {p50:.1f} ms, p95 {p95:.1f} ms ({len(values)} requests)")


def latency(args: argparse.Namespace, learned: Learned) -> None:
    with tempfile.TemporaryDirectory(prefix="search-bench-") as scratch:
        redis = EmbeddedRedis(Path(scratch) / "redis", 10.0)
        server = redis.start()
        port = 18000 + random.randrange(1000)
        api = None
        try:
            publish_all(redis.url, learned)
            api = start_api(REPO, redis.url, port, Path(scratch) / "api.log")
            wait_healthy(port)
            asyncio.run(under_load(port, learned, args))
        finally:
            if api is not None:
                stop_api(api)
            server.terminate()
            server.wait()


def wait_healthy(port: int) -> None:
    import urllib.request

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the API did not answer /healthz")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--topics", type=int, nargs="+", default=[50])
    p.add_argument("--vocab-size", type=int, default=50_000)
    p.add_argument("--docs", type=int, default=50_000, help="articles learned")
    p.add_argument("--kept", type=int, default=50_000, help="the reservoir's slots")
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--refresh-share", type=float, default=0.5, help="of a core, refolding (0: Gibbs only)"
    )
    p.add_argument("--latency", action="store_true", help="also time the routes, at each K")
    p.add_argument("--clients", type=int, default=200)
    p.add_argument("--duration", type=float, default=30.0, help="seconds of timed requests")
    p.add_argument("--corpora", type=Path, default=CORPORA)
    args = p.parse_args()
    torch.set_num_threads(1)
    articles = dev_texts(args.corpora)
    for k in args.topics:
        learned = learn(args, k, articles)
        quality(args, k, learned)
        if args.latency:
            latency(args, learned)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
