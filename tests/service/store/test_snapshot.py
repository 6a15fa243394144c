"""The Redis schema: what the worker writes is what the API reads, atomically and exactly."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import redis
import torch

from service.keys import PERPLEXITY_KEY
from service.store.control import read_control, request_checkpoint, set_paused
from service.store.heartbeat import beat, read_heartbeat
from service.store.perplexity import (
    PerplexityPoint,
    append_perplexity,
    latest_perplexity,
    read_perplexity,
    truncate_perplexity,
)
from service.store.pipeline_figures import read_queue, read_scraper_counters
from service.store.published_model import (
    publish_model,
    read_model,
    read_model_summary,
    read_model_version,
)
from service.store.snapshot import Snapshot, WordWeight, read_snapshot, top_words
from tests.service.conftest import Published


@pytest.mark.slow
def test_nothing_is_published_at_first(redis_client: redis.Redis) -> None:
    assert read_snapshot(redis_client) is None
    assert read_heartbeat(redis_client) is None
    assert read_perplexity(redis_client) == []
    assert latest_perplexity(redis_client) is None
    assert read_model(redis_client) is None
    assert read_model_version(redis_client) is None
    assert read_model_summary(redis_client) is None


@pytest.mark.slow
def test_snapshot_round_trips_and_beats_the_heart(
    redis_client: redis.Redis, published: Published
) -> None:
    assert read_snapshot(redis_client) == published.snapshot
    assert read_heartbeat(redis_client) == published.snapshot.updated_at
    beat(redis_client, at=123.5)
    assert read_heartbeat(redis_client) == 123.5


@pytest.mark.slow
def test_top_words_are_sorted_and_capped_at_the_vocabulary(published: Published) -> None:
    beta, vocab = published.beta, published.vocab
    topics = top_words(beta, vocab, 100)
    assert len(topics) == 3 and all(len(t) == len(vocab) for t in topics)
    assert [w.word for w in topics[1][:4]] == ["engine", "piston", "turbine", "valve"]
    weights = [w.weight for w in topics[1]]
    assert weights == sorted(weights, reverse=True)
    assert [w.word for w in top_words(beta, vocab, 2)[2]] == ["sonata", "violin"]


@pytest.mark.slow
def test_non_finite_values_are_never_published(redis_client: redis.Redis) -> None:
    vocab = ["a", "b"]
    beta = torch.tensor([[0.5, math.nan], [0.5, 0.5]])
    with pytest.raises(ValueError, match="NaN"):
        top_words(beta, vocab, 5)
    with pytest.raises(ValueError, match="NaN"):
        publish_model(redis_client, beta, vocab, docs_seen=1, gamma=0.1)
    with pytest.raises(ValueError, match="NaN"):
        append_perplexity(redis_client, PerplexityPoint(1, math.inf, 1.0, 0.0), keep=10)
    assert read_model(redis_client) is None and read_perplexity(redis_client) == []


@pytest.mark.slow
def test_model_round_trips_bit_for_bit(redis_client: redis.Redis, published: Published) -> None:
    model = read_model(redis_client)
    assert model is not None
    assert model.version == published.version == read_model_version(redis_client)
    assert read_model_summary(redis_client) == (published.version, 3000)
    assert isinstance(model.beta, np.ndarray)  # the API holds numpy, no torch
    assert np.array_equal(model.beta, published.beta.float().numpy())
    assert model.vocab == published.vocab and model.gamma == 0.1 and model.n_topics == 3
    new = publish_model(redis_client, published.beta, model.vocab, docs_seen=3000, gamma=0.1)
    assert new != published.version, "a republished model gets a new version"


@pytest.mark.slow
def test_model_is_stored_word_major_and_a_row_major_one_still_reads(
    redis_client: redis.Redis, published: Published
) -> None:
    """A word's column is one run of bytes in Redis, and the API's columns for inference are a
    view of what it read (no copy of the model); a hash written before the layout existed
    (K x W, no ``layout``) reads as the same beta."""
    from service.api.infer.proportions import word_columns
    from service.keys import MODEL_KEY

    raw = redis_client.hgetall(MODEL_KEY)
    k, w = published.beta.shape
    parts = [raw[f"beta:{i}".encode()] for i in range(int(raw[b"beta_parts"]))]
    words = np.frombuffer(b"".join(parts), dtype="<f4").reshape(w, k)
    assert raw[b"layout"] == b"words"
    assert np.array_equal(words[2], published.beta.float()[:, 2].numpy())
    model = read_model(redis_client)
    assert model is not None
    columns = word_columns(model.beta)
    assert np.shares_memory(columns, model.beta) and columns.flags.c_contiguous
    row_major = published.beta.float().contiguous().numpy().astype("<f4").tobytes()
    redis_client.hset(MODEL_KEY, "beta", row_major)  # one field: before the parts
    redis_client.hdel(MODEL_KEY, "layout", "beta_parts", *(f"beta:{i}" for i in range(len(parts))))
    old = read_model(redis_client)
    assert old is not None and np.array_equal(old.beta, published.beta.float().numpy())


@pytest.mark.slow
@pytest.mark.parametrize("whole", [False, True], ids=["in-parts", "whole-hash"])
def test_model_carries_its_vocabulary_version_and_an_older_hash_reads_0(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch, whole: bool
) -> None:
    """The version is stored with beta and the words, and read back by both ways of reading
    (in parts, or the whole hash at once); a hash from before versions existed reads as 0."""
    import service.store.published_model as schema
    from service.keys import MODEL_KEY

    if whole:
        monkeypatch.setattr(schema, "MODEL_READ_TRIES", 1)  # straight to the atomic read
    vocab = ["apple", "banana", "cherry"]
    publish_model(redis_client, torch.rand(2, 3), vocab, docs_seen=5, gamma=0.1, vocab_version=4)
    assert redis_client.hget(MODEL_KEY, "vocab_version") == b"4"
    model = read_model(redis_client)
    assert model is not None and model.vocab_version == 4 and model.vocab == vocab
    redis_client.hdel(MODEL_KEY, "vocab_version")  # as an older worker wrote it
    older = read_model(redis_client)
    assert older is not None and older.vocab_version == 0 and older.vocab == vocab
    publish_model(redis_client, torch.rand(2, 3), vocab, docs_seen=6, gamma=0.1)
    default = read_model(redis_client)
    assert default is not None and default.vocab_version == 0
    with pytest.raises(ValueError, match="vocab_version"):
        publish_model(
            redis_client, torch.rand(2, 3), vocab, docs_seen=7, gamma=0.1, vocab_version=-1
        )


@pytest.mark.slow
def test_model_shape_must_match_the_vocabulary(redis_client: redis.Redis) -> None:
    with pytest.raises(ValueError, match="expected"):
        publish_model(redis_client, torch.ones(2, 3), ["a", "b"], docs_seen=1, gamma=0.1)


@pytest.mark.slow
def test_perplexity_since_is_exclusive_and_ordered(
    redis_client: redis.Redis, published: Published
) -> None:
    assert read_perplexity(redis_client) == published.points
    assert read_perplexity(redis_client, since=1000) == published.points[1:]
    assert read_perplexity(redis_client, since=3000) == []
    assert latest_perplexity(redis_client) == published.points[-1]


@pytest.mark.slow
def test_perplexity_keeps_one_point_per_docs_seen_and_the_newest(
    redis_client: redis.Redis,
) -> None:
    for d in range(1, 6):
        append_perplexity(redis_client, PerplexityPoint(d * 10, 100.0 + d, 100.0, d), keep=3)
    append_perplexity(redis_client, PerplexityPoint(50, 7.0, 7.0, 9.0), keep=3)
    points = read_perplexity(redis_client)
    assert [p.docs_seen for p in points] == [30, 40, 50]
    assert points[-1].perplexity == 7.0


@pytest.mark.slow
def test_perplexity_points_keep_their_vocabulary_version(redis_client: redis.Redis) -> None:
    """A point stores the vocabulary version it was scored under; an older worker's point (no
    version) reads as None, and a newer one's unknown fields are left out."""
    points = [
        PerplexityPoint(10, 9.0, 9.5, 1.0),
        PerplexityPoint(20, 8.0, 8.5, 2.0, 0.2, 0.5, vocab_version=0),
        PerplexityPoint(30, 7.0, 7.5, 3.0, 0.3, 0.6, vocab_version=1),
    ]
    for point in points:
        append_perplexity(redis_client, point, keep=10)
    assert read_perplexity(redis_client) == points
    assert latest_perplexity(redis_client) == points[-1]
    older = '{"docs_seen":40,"perplexity":6.0,"perplexity_avg":6.5,"at":4.0}'
    newer = older.replace("40", "50")[:-1] + ',"vocab_version":2,"from_the_future":true}'
    redis_client.zadd(PERPLEXITY_KEY, {older: 40, newer: 50})
    read = read_perplexity(redis_client, since=30)
    assert [(p.docs_seen, p.vocab_version) for p in read] == [(40, None), (50, 2)]


@pytest.mark.slow
def test_truncate_drops_points_beyond_a_resumed_checkpoint(
    redis_client: redis.Redis, published: Published
) -> None:
    assert truncate_perplexity(redis_client, after_docs=2000) == 1
    assert [p.docs_seen for p in read_perplexity(redis_client)] == [1000, 2000]


@pytest.mark.slow
def test_control_pause_and_checkpoint_requests(redis_client: redis.Redis) -> None:
    assert read_control(redis_client).paused is False
    set_paused(redis_client, True)
    assert request_checkpoint(redis_client) == 1
    assert request_checkpoint(redis_client) == 2
    control = read_control(redis_client)
    assert control.paused is True and control.checkpoint_seq == 2
    set_paused(redis_client, False)
    assert read_control(redis_client).paused is False


@pytest.mark.slow
def test_queue_and_scraper_counters(redis_client: redis.Redis) -> None:
    assert read_queue(redis_client, "docs", "workers").length == 0
    for i in range(3):
        redis_client.xadd("docs", {"id": str(i)})
    assert read_queue(redis_client, "docs", "workers").pending == 0  # no group yet
    redis_client.xgroup_create("docs", "workers", id="0")
    redis_client.xreadgroup("workers", "w1", {"docs": ">"}, count=2)
    stats = read_queue(redis_client, "docs", "workers")
    assert (stats.length, stats.pending) == (3, 2)
    redis_client.hset("streamlda:scraper:counters", mapping={"fetched": 7, "skipped:short": 2})
    assert read_scraper_counters(redis_client) == {"fetched": 7, "skipped:short": 2}


def test_snapshot_json_is_strict() -> None:
    words = [[WordWeight("a", 0.5)]]
    snapshot = Snapshot(1, 0.0, "sgld", 0.01, "cpu", 3, words, [[]], counters={"updates": 1})
    assert Snapshot.from_json(snapshot.to_json()) == snapshot


@pytest.mark.slow
def test_snapshot_keeps_the_mean_and_the_sample_apart(published: Published) -> None:
    snapshot = Snapshot.from_json(published.snapshot.to_json())
    assert snapshot == published.snapshot
    assert snapshot.words("mean") == top_words(published.beta, published.vocab, 100)
    assert snapshot.words("sample") == top_words(published.sample, published.vocab, 100)
    assert snapshot.words("mean") != snapshot.words("sample")


def test_a_snapshot_from_before_beta_mean_serves_its_sample_as_both() -> None:
    """Its only topics were the sample, which is beta_mean at mean_decay 0."""
    old = '{"docs_seen":1,"updated_at":0.0,"sampler":"sgld","step_size":0.01,"device":"cpu",'
    old += '"vocab_size":2,"topics":[[["a",0.75],["b",0.25]]],"counters":{}}'
    snapshot = Snapshot.from_json(old)
    assert (
        snapshot.words("sample")
        == snapshot.words("mean")
        == [[WordWeight("a", 0.75), WordWeight("b", 0.25)]]
    )


@pytest.mark.slow
def test_publishing_a_large_model_adds_no_copy_of_it(redis_client: redis.Redis) -> None:
    """The lazy chain's beta_mean (word-major) goes to Redis from its own memory, and the
    finiteness check allocates nothing of its size: at K = 1,000, W = 100,000 each copy is
    400 MB of the worker's peak."""
    from tests.support.memory import peak_growth

    k, w = 200, 50_000
    beta = torch.rand(w, k, dtype=torch.float32).T  # (K, W), stored word-major
    vocab = [f"w{i}" for i in range(w)]
    _, grew = peak_growth(lambda: publish_model(redis_client, beta, vocab, docs_seen=1, gamma=0.1))
    assert grew < beta.numel() * beta.element_size() // 4, grew
    model = read_model(redis_client)
    assert model is not None and np.array_equal(model.beta, beta.numpy())
    beta[3, 7] = math.inf
    with pytest.raises(ValueError, match="NaN"):
        publish_model(redis_client, beta, vocab, docs_seen=2, gamma=0.1)


@pytest.mark.slow
def test_reading_a_large_model_holds_about_one_copy_of_it(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API loads the model in parts copied into one array: the whole reply read at once
    went through redis-py's buffer, its bytes and a trimmed copy (1.1 GB at the peak of an
    API process for a 400 MB model). Parts of 1 MB here, as 16 MB are to 400 MB."""
    import service.store.published_model as schema
    from tests.support.memory import peak_growth

    monkeypatch.setattr(schema, "MODEL_PART_BYTES", 2**20)
    k, w = 200, 50_000
    beta = torch.rand(w, k, dtype=torch.float32).T
    vocab = [f"w{i}" for i in range(w)]
    publish_model(redis_client, beta, vocab, docs_seen=1, gamma=0.1)
    model, grew = peak_growth(lambda: read_model(redis_client))
    assert model is not None and np.array_equal(model.beta, beta.numpy()) and model.vocab == vocab
    assert grew < 1.25 * beta.numel() * beta.element_size(), grew


@pytest.mark.slow
@pytest.mark.parametrize("every_try", [False, True])
def test_a_model_republished_while_it_is_read_in_parts_is_read_whole(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch, every_try: bool
) -> None:
    """A model published between the parts of a read is never mixed with the one before: the
    read starts again (once here), or, when the worker keeps republishing (every try here), the
    last try reads the hash in one atomic reply. A smaller model leaves no parts behind."""
    import service.store.published_model as schema

    monkeypatch.setattr(schema, "MODEL_PART_BYTES", 4 * 3 * 2)  # 2 words a part
    republished = schema.MODEL_READ_TRIES - 1 if every_try else 1
    vocab = [f"w{i}" for i in range(9)]
    betas = [torch.rand(3, 9) for _ in range(republished + 1)]
    publish_model(redis_client, betas[0], vocab, docs_seen=1, gamma=0.1)
    read_parts = schema._read_parts
    calls = 0

    def republishing(*args):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls <= republished:
            publish_model(redis_client, betas[calls], vocab, docs_seen=1 + calls, gamma=0.1)
        return read_parts(*args)

    monkeypatch.setattr(schema, "_read_parts", republishing)
    model = read_model(redis_client)
    assert calls == schema.MODEL_READ_TRIES - 1 if every_try else calls == 2
    assert model is not None and model.docs_seen == 1 + republished
    assert np.array_equal(model.beta, betas[-1].numpy()) and model.vocab == vocab
    publish_model(redis_client, betas[0][:, :3], vocab[:3], docs_seen=9, gamma=0.1)
    head = [b"version", b"docs_seen", b"topics", b"vocab_size", b"vocab_version", b"layout"]
    rest = [b"gamma", b"published_at", b"beta_parts", b"beta:0", b"beta:1", b"vocab"]
    assert sorted(redis_client.hkeys(schema.MODEL_KEY)) == sorted([*head, *rest])


def test_snapshot_carries_its_vocabulary_version_and_an_older_one_reads_0() -> None:
    """By both parsers: the version round-trips, and a snapshot without it is version 0."""
    from service.api.reads.snapshot_parse import parse_snapshot

    words = [[WordWeight("a", 0.5)]]
    snapshot = Snapshot(1, 0.0, "scir", 0.01, "cpu", 3, words, words, vocab_version=3)
    older = {k: v for k, v in json.loads(snapshot.to_json()).items() if k != "vocab_version"}
    for parse in (Snapshot.from_json, lambda raw: parse_snapshot(raw.encode())):
        assert parse(snapshot.to_json()) == snapshot
        assert parse(snapshot.to_json()).vocab_version == 3
        assert parse(json.dumps(older)).vocab_version == 0


def test_a_newer_workers_snapshot_is_read_without_its_new_fields() -> None:
    """An API from before a field keeps serving a newer worker's snapshot (a rolling upgrade):
    the fields it does not know are left out, by both parsers."""
    from service.api.reads.snapshot_parse import parse_snapshot

    words = [[WordWeight("a", 0.5)]]
    text = Snapshot(1, 0.0, "scir", 0.01, "cpu", 3, words, words).to_json()
    newer = text[:-1] + ',"from_the_future":[1,2,3]}'
    for parse in (Snapshot.from_json, lambda raw: parse_snapshot(raw.encode())):
        snapshot = parse(newer)
        assert snapshot.docs_seen == 1 and snapshot.topics == words


@pytest.mark.slow
def test_a_snapshot_without_a_version_token_is_named_by_its_text(
    redis_client: redis.Redis, published: Published
) -> None:
    """A worker from before the tokens wrote the snapshot alone: its name follows its text."""
    from service.keys import SNAPSHOT_KEY, SNAPSHOT_VERSION_KEY
    from service.store.snapshot import read_raw_snapshot, read_versioned_snapshot

    current = read_raw_snapshot(redis_client)
    assert current is not None and current[0] == redis_client.get(SNAPSHOT_VERSION_KEY).decode()
    redis_client.delete(SNAPSHOT_VERSION_KEY)
    older = read_raw_snapshot(redis_client)
    assert older is not None and older[1] == current[1] and older[0] != current[0]
    assert read_raw_snapshot(redis_client) == older  # the same text, the same name
    assert read_versioned_snapshot(redis_client) == (older[0], published.snapshot)
    redis_client.set(SNAPSHOT_KEY, current[1].replace(b'"docs_seen":3000', b'"docs_seen":3001'))
    changed = read_raw_snapshot(redis_client)
    assert changed is not None and changed[0] not in (older[0], current[0])
