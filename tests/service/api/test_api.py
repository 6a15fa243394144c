"""Every endpoint's documented shape, against a real Redis filled by the writer functions."""

from __future__ import annotations

from datetime import datetime

import pytest
import redis
from fastapi.testclient import TestClient

from service.api.infer.model_cache import ModelCache
from service.keys import SNAPSHOT_KEY
from service.settings import Settings
from service.store.perplexity import PerplexityPoint, append_perplexity
from service.store.published_model import publish_model
from service.store.snapshot import publish_snapshot
from tests.service.conftest import VOCAB, Published, model_beta

pytestmark = pytest.mark.slow


def test_topics_lists_every_topic_with_top_words(api: TestClient, published: Published) -> None:
    body = api.get("/topics", params={"top": 3}).json()
    assert set(body) == {
        "docs_seen", "updated_at", "sampler", "estimate", "relevance", "quality_docs", "topics",
    }  # fmt: skip
    assert set(body["topics"][0]) == {
        "id", "words", "coherence", "drift", "size", "name", "suggested_name", "seeds",
        "seeds_in_top",
    }  # fmt: skip
    assert body["docs_seen"] == 3000 and body["sampler"] == "sgrld" and body["estimate"] == "mean"
    datetime.fromisoformat(body["updated_at"])
    assert [t["id"] for t in body["topics"]] == [0, 1, 2]
    assert [w["word"] for w in body["topics"][0]["words"]] == ["apple", "banana", "cherry"]
    assert set(body["topics"][0]["words"][0]) == {"word", "weight"}
    assert len(api.get("/topics").json()["topics"][0]["words"]) == 10  # the default


def test_top_up_to_the_stored_words(api: TestClient, published: Published) -> None:
    words = api.get("/topics/1", params={"top": 100}).json()["words"]
    assert len(words) == len(published.vocab)  # a vocabulary smaller than 100 words


def test_one_topic(api: TestClient, published: Published) -> None:
    body = api.get("/topics/2").json()
    assert body["id"] == 2 and body["docs_seen"] == 3000
    assert [w["word"] for w in body["words"][:2]] == ["sonata", "violin"]
    assert len(body["words"]) == len(published.vocab)  # default 20, capped by W = 12


def test_topics_serve_the_mean_and_the_sample_on_request(
    api: TestClient, published: Published
) -> None:
    """The mean's words by default, the current sample's with ?estimate=sample: each says which
    and has its own ETag; /topics/{id} likewise."""
    mean = api.get("/topics", params={"top": 4})
    sample = api.get("/topics", params={"top": 4, "estimate": "sample"})
    assert mean.content == api.get("/topics", params={"top": 4, "estimate": "mean"}).content
    assert mean.headers["etag"] != sample.headers["etag"]
    for estimate, beta, body in (
        ("mean", published.beta, mean.json()),
        ("sample", published.sample, sample.json()),
    ):
        assert body["estimate"] == estimate
        for topic in body["topics"]:
            weights, ids = beta[topic["id"]].topk(4)
            assert [w["word"] for w in topic["words"]] == [published.vocab[i] for i in ids]
            assert [w["weight"] for w in topic["words"]] == pytest.approx(weights.tolist())
        one = api.get("/topics/1", params={"top": 4, "estimate": estimate}).json()
        assert one["estimate"] == estimate and one["words"] == body["topics"][1]["words"]
    words = [w["word"] for w in sample.json()["topics"][0]["words"]]
    assert words == ["grape", "cherry", "banana", "apple"]  # the sample's order, not the mean's
    refused = api.get("/topics", params={"estimate": "median"})
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["loc"] == ["query", "estimate"]


def test_perplexity_history_and_since(api: TestClient, published: Published) -> None:
    body = api.get("/perplexity").json()
    assert body["latest"]["docs_seen"] == 3000
    assert [p["docs_seen"] for p in body["history"]] == [1000, 2000, 3000]
    assert set(body["history"][0]) == {
        "docs_seen",
        "perplexity",
        "perplexity_avg",
        "coherence",
        "diversity",
        "vocab_version",
        "at",
    }
    assert {p["vocab_version"] for p in body["history"]} == {None}  # points of an older worker
    assert body["history"][1]["perplexity_avg"] == 2600.0
    since = api.get("/perplexity", params={"since": 2000}).json()
    assert [p["docs_seen"] for p in since["history"]] == [3000]
    assert api.get("/perplexity", params={"since": 3000}).json()["history"] == []


def test_perplexity_before_any_evaluation(api: TestClient) -> None:
    assert api.get("/perplexity").json() == {"latest": None, "history": []}


def test_stats(
    api: TestClient, published: Published, redis_client: redis.Redis, settings: Settings
) -> None:
    redis_client.xadd(settings.queue.stream, {"id": "1"})
    redis_client.xadd(settings.queue.stream, {"id": "2"})
    redis_client.xgroup_create(settings.queue.stream, settings.queue.group, id="0")
    redis_client.xreadgroup(settings.queue.group, "w", {settings.queue.stream: ">"}, count=1)
    redis_client.hset(
        "streamlda:scraper:counters",
        mapping={"fetched": 5, "queued": 2, "skipped:short": 3, "updated_at": 17.5},
    )
    body = api.get("/stats").json()
    assert body["docs_seen"] == 3000 and body["docs_per_s"] == 12.5
    assert body["sampler"] == "sgrld" and body["step_size"] == 0.005 and body["device"] == "cpu"
    assert body["topics"] == 3 and body["vocab_size"] == 12 and body["vocab_version"] == 0
    assert body["queue"] == {
        "stream": settings.queue.stream,
        "group": settings.queue.group,
        "length": 2,
        "pending": 1,
    }
    assert body["scraper"] == {"fetched": 5, "queued": 2, "skipped:short": 3, "updated_at": 17.5}
    assert body["worker"]["updates"] == 60
    assert body["paused"] is False and 0 <= body["heartbeat_age_s"] < 60
    datetime.fromisoformat(body["updated_at"])


def test_stats_before_the_first_update(api: TestClient) -> None:
    body = api.get("/stats").json()
    assert body["docs_seen"] == 0 and body["sampler"] is None and body["updated_at"] is None
    assert body["vocab_version"] is None
    assert body["queue"]["length"] == 0 and body["scraper"] == {}


def test_infer_finds_the_topic_of_a_text(api: TestClient, published: Published) -> None:
    body = api.post("/infer", json={"text": "Apple-banana cherry; the VIOLIN! zebra"}).json()
    assert body["model_version"] == published.version and body["docs_seen"] == 3000
    assert body["vocab_version"] == 0
    assert body["tokens"] == 4 and body["ignored_tokens"] == 2  # "the", "zebra"
    assert len(body["proportions"]) == 3 and abs(sum(body["proportions"]) - 1) < 1e-9
    assert [t["id"] for t in body["topics"]] == [0, 2, 1]
    assert body["proportions"][0] > 0.6


def test_infer_answers_with_the_vocabulary_that_encoded_the_text(
    api: TestClient, redis_client: redis.Redis
) -> None:
    """A text is encoded with the published model's own words, and its answer names that model
    and its vocabulary's version: a refreshed vocabulary counts other words, at once."""
    text = "Apple banana cherry violin zebra"
    first = publish_model(redis_client, model_beta(), VOCAB, docs_seen=100, gamma=0.1)
    body = api.post("/infer", json={"text": text}).json()
    assert (body["model_version"], body["vocab_version"]) == (first, 0)
    assert (body["tokens"], body["ignored_tokens"]) == (4, 1)  # "zebra" is not a word of A
    assert body["topics"][0]["id"] == 0  # apple, banana, cherry: topic 0

    # Vocabulary B keeps "violin" (now topic 1's) and adds "zebra" (topic 0's), drops the fruit.
    refreshed = [
        "zebra", "quokka", "lemur", "otter",
        "violin", "harp", "flute", "drum",
        "granite", "basalt", "slate", "marble",
    ]  # fmt: skip
    second = publish_model(
        redis_client, model_beta(), refreshed, docs_seen=200, gamma=0.1, vocab_version=1
    )
    body = api.post("/infer", json={"text": text}).json()
    assert (body["model_version"], body["vocab_version"]) == (second, 1)
    assert (body["tokens"], body["ignored_tokens"]) == (2, 3)  # only "violin" and "zebra"
    batch = api.post("/infer/batch", json={"texts": [text, "granite slate"]}).json()["results"]
    assert [(r["vocab_version"], r["tokens"], r["ignored_tokens"]) for r in batch] == [
        (1, 2, 3),
        (1, 2, 0),
    ]
    assert batch[1]["topics"][0]["id"] == 2 and {r["model_version"] for r in batch} == {second}


def test_infer_with_no_known_word_gives_the_prior(api: TestClient, published: Published) -> None:
    body = api.post("/infer", json={"text": "zebra quokka"}).json()
    assert body["tokens"] == 0 and body["ignored_tokens"] == 2
    assert body["proportions"] == [1 / 3] * 3


def test_model_is_loaded_once_per_version(redis_client: redis.Redis, published: Published) -> None:
    cache = ModelCache()
    first = cache.get(redis_client)
    assert first is not None and cache.get(redis_client) is first and cache.loads == 1
    publish_model(redis_client, published.beta, published.vocab, docs_seen=4000, gamma=0.1)
    second = cache.get(redis_client)
    assert second is not None and second.model.docs_seen == 4000 and cache.loads == 2


def test_health_and_readiness(api: TestClient, published: Published) -> None:
    assert api.get("/healthz").json() == {"status": "ok"}
    body = api.get("/readyz").json()
    assert body == {"status": "ready", "model_version": published.version, "docs_seen": 3000}


def test_readyz_is_503_before_a_snapshot(api: TestClient) -> None:
    response = api.get("/readyz")
    assert response.status_code == 503 and "first snapshot" in response.json()["detail"]


def test_readyz_follows_topics_not_the_model(
    api: TestClient, redis_client: redis.Redis, published: Published
) -> None:
    """The worker publishes its model at 0 documents, before any topics: not ready yet."""
    redis_client.delete(SNAPSHOT_KEY)
    assert api.get("/topics").status_code == 503
    response = api.get("/readyz")
    assert response.status_code == 503 and "first snapshot" in response.json()["detail"]
    publish_snapshot(redis_client, published.snapshot)
    assert api.get("/topics").status_code == 200 and api.get("/readyz").status_code == 200


def test_admin_sets_the_control_keys(api: TestClient, settings: Settings) -> None:
    auth = {"Authorization": f"Bearer {settings.api.admin_token}"}
    assert api.post("/admin/pause", headers=auth).json() == {"paused": True, "checkpoint_seq": 0}
    assert api.get("/stats").json()["paused"] is True
    assert api.post("/admin/checkpoint", headers=auth).json()["checkpoint_seq"] == 1
    assert api.post("/admin/resume", headers=auth).json() == {"paused": False, "checkpoint_seq": 1}


def test_cors_allows_the_configured_origin(api: TestClient, published: Published) -> None:
    allowed = api.get("/topics", headers={"Origin": "http://dashboard.example"})
    assert allowed.headers["access-control-allow-origin"] == "http://dashboard.example"
    other = api.get("/topics", headers={"Origin": "http://elsewhere.example"})
    assert "access-control-allow-origin" not in other.headers


def test_openapi_and_offline_docs(api: TestClient) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    for path in ("/topics", "/topics/{topic_id}", "/perplexity", "/stats", "/infer", "/metrics"):
        assert path in paths
    page = api.get("/docs").text
    assert "/openapi.json" in page and "cdn" not in page.lower()
    if "/docs/assets/" in page:
        assert api.get("/docs/assets/swagger-ui-bundle.js").status_code == 200


def test_page_is_self_contained(api: TestClient) -> None:
    page = api.get("/")
    assert page.headers["content-type"].startswith("text/html")
    assert 'id="topics"' in page.text and 'id="plot"' in page.text
    assert "http://" not in page.text.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page.text


def test_perplexity_points_appear_as_published(api: TestClient, redis_client: redis.Redis) -> None:
    append_perplexity(redis_client, PerplexityPoint(500, 10.0, 11.0, 1.0), keep=10)
    assert api.get("/perplexity").json()["latest"]["perplexity_avg"] == 11.0


def test_points_carry_topic_quality_when_the_worker_scored_it(
    api: TestClient, redis_client: redis.Redis
) -> None:
    append_perplexity(redis_client, PerplexityPoint(500, 10.0, 11.0, 1.0), keep=10)  # older worker
    append_perplexity(redis_client, PerplexityPoint(1000, 9.0, 10.0, 2.0, 0.31, 0.62), keep=10)
    body = api.get("/perplexity").json()
    assert [(p["coherence"], p["diversity"]) for p in body["history"]] == [
        (None, None),
        (0.31, 0.62),
    ]
    metrics = api.get("/metrics").text
    assert "streamlda_topic_coherence 0.31" in metrics
    assert "streamlda_topic_diversity 0.62" in metrics
