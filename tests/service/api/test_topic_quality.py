"""Per-topic coherence, drift and word intervals in /topics, /topics/{id} and /metrics."""

from __future__ import annotations

import dataclasses

import pytest
import redis
import torch
from fastapi.testclient import TestClient

from lda.config import CHANGED_BITS
from service.api.schemas import OneTopicOut, TopicsOut
from service.learn.topic_watch import TopicWatch, significant
from service.store.snapshot import publish_snapshot
from tests.service.api.test_metrics import parse
from tests.service.conftest import (
    COHERENCE,
    K,
    Published,
    watch_fields,
    watched_topics,
)


@pytest.fixture
def quality(redis_client: redis.Redis, published: Published) -> TopicWatch:
    watch = watched_topics(published)
    fields = watch_fields(watch, published)
    publish_snapshot(redis_client, dataclasses.replace(published.snapshot, **fields))
    return watch


@pytest.mark.slow
def test_topics_carry_coherence_and_drift_and_sort_by_coherence(
    api: TestClient, quality: TopicWatch
) -> None:
    body = api.get("/topics").json()
    TopicsOut.model_validate(body)
    assert body["quality_docs"] == 2000
    assert [t["coherence"] for t in body["topics"]] == [0.12, None, 0.31]
    assert [t["drift"] for t in body["topics"]] == pytest.approx(quality.drift)
    assert all("low" not in w for t in body["topics"] for w in t["words"])
    ranked = api.get("/topics?sort=coherence").json()["topics"]
    assert [t["id"] for t in ranked] == [2, 0, 1]  # highest first, none last
    assert api.get("/topics?sort=weight").status_code == 422


@pytest.mark.slow
def test_a_topic_says_when_it_last_changed(api: TestClient, quality: TopicWatch) -> None:
    assert quality.drift is not None and quality.changed_at is not None
    moved = [k for k in range(K) if quality.drift[k] > CHANGED_BITS]
    assert moved and len(moved) < K  # the fixture moves some topics, not all
    for k in range(K):
        body = api.get(f"/topics/{k}").json()
        OneTopicOut.model_validate(body)
        assert body["changed_at_docs"] == (2000 if k in moved else 1000)
        assert body["coherence"] == (None if k == 1 else COHERENCE[k])


@pytest.mark.slow
def test_uncertainty_gives_each_words_interval_over_recent_samples(
    api: TestClient, published: Published, quality: TopicWatch
) -> None:
    body = api.get("/topics?uncertainty=true&top=4").json()
    TopicsOut.model_validate(body)
    window = quality.window
    assert window is not None
    ids = torch.topk(published.beta.float(), 4, dim=1).indices
    bounds = window.intervals(ids)
    assert bounds is not None
    for k, topic in enumerate(body["topics"]):
        lows = [w["low"] for w in topic["words"]]
        highs = [w["high"] for w in topic["words"]]
        assert lows == significant(bounds[0][k]).tolist()  # published to 3 significant digits
        assert highs == significant(bounds[1][k]).tolist()
        assert all(lo <= hi for lo, hi in zip(lows, highs, strict=True))
    # the samples moved weight between the first and third word: their intervals are wide
    assert highs[0] - lows[0] > 0.01 and highs[1] - lows[1] < 1e-6
    one = api.get("/topics/0?uncertainty=true&top=2").json()
    assert [w["low"] for w in one["words"]] == significant(bounds[0][0, :2]).tolist()
    sample = api.get("/topics?uncertainty=true&estimate=sample").json()
    assert all(w["low"] is None for t in sample["topics"] for w in t["words"])


@pytest.mark.slow
def test_older_snapshots_have_no_quality_and_no_intervals(
    api: TestClient, published: Published
) -> None:
    body = api.get("/topics?uncertainty=true").json()
    assert body["quality_docs"] is None
    assert {t["coherence"] for t in body["topics"]} == {None}
    assert {w["low"] for t in body["topics"] for w in t["words"]} == {None}
    assert api.get("/topics/1").json()["changed_at_docs"] is None


@pytest.mark.slow
def test_metrics_report_drift(api: TestClient, quality: TopicWatch) -> None:
    assert quality.drift is not None
    samples = parse(api.get("/metrics").text)
    mean = samples[("streamlda_topic_drift_bits", frozenset({("stat", "mean")}))]
    assert mean == pytest.approx(sum(quality.drift) / K)
    assert samples[("streamlda_topic_drift_bits", frozenset({("stat", "max")}))] == pytest.approx(
        max(quality.drift)
    )
    changed = samples[("streamlda_topics_changed", frozenset())]
    assert changed == sum(d > CHANGED_BITS for d in quality.drift)


def test_a_restarted_scorer_keeps_when_each_topic_last_changed() -> None:
    """After a scorer restart the first evaluation has no drift: the topics did not all change
    then, so the documents-seen of their last change stay as they were."""
    watch = TopicWatch(samples=0)
    watch.scored(1000, {"coherence": [0.1, 0.2], "drift": None, "matched": None})
    watch.scored(2000, {"coherence": [0.1, 0.2], "drift": [0.2, 0.01], "matched": [1, 0]})
    assert watch.changed_at == [2000, 1000]  # topic 1 is the old topic 0, which stayed
    watch.scored(3000, {"coherence": [0.1, 0.2], "drift": None, "matched": None})
    assert watch.changed_at == [2000, 1000] and watch.drift is None and watch.docs == 3000
