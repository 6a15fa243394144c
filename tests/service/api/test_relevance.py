"""Relevance ranking (Sievert & Shirley, 2014): the formula against a brute-force count, its
fallback without the stream's figures, and ``?relevance=`` on the topics routes."""

from __future__ import annotations

import numpy as np
import pytest
import redis
import torch
from fastapi.testclient import TestClient

from lda.relevance import TOPICS_PER_BLOCK, suggested_names
from service.api.reads.relevance import Rankings, marginal, rank
from service.store.published_model import PublishedModel, StreamFigures, publish_model
from tests.service.conftest import VOCAB, Published, model_beta


def model(beta: np.ndarray, counts: np.ndarray | None) -> PublishedModel:
    k, w = beta.shape
    stream = None
    if counts is not None:
        stream = StreamFigures(
            counts, np.full(k, 1 / k), np.zeros(0, np.int64), np.zeros((0, k), np.float32)
        )
    vocab = [f"w{i}" for i in range(w)]
    return PublishedModel("v1", 10, 0.1, beta, vocab, 0.0, stream)


def brute(beta: np.ndarray, p: np.ndarray, lam: float, n: int) -> list[list[int]]:
    relevance = lam * np.log(beta) + (1 - lam) * np.log(beta / p)
    return [sorted(range(beta.shape[1]), key=lambda w: (-r[w], -b[w]))[:n] for r, b in
            zip(relevance, beta, strict=True)]  # fmt: skip


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.6, 1.0])
def test_words_are_ranked_by_the_formula(lam: float) -> None:
    """Over more topics than one block; p(w) is the stream's word frequency."""
    rng = np.random.default_rng(1)
    beta = rng.dirichlet(np.full(50, 0.3), size=TOPICS_PER_BLOCK + 5).astype(np.float32)
    counts = rng.integers(1, 1000, size=50).astype(np.float64)
    ranking = rank(model(beta, counts), lam, 7)
    assert ranking.ids.tolist() == brute(beta.astype(np.float64), counts / counts.sum(), lam, 7)
    k = TOPICS_PER_BLOCK + 2
    words = ranking.words(k, 3)
    assert [w.weight for w in words] == [float(beta[k, i]) for i in ranking.ids[k, :3]]
    names = suggested_names(ranking.ids, ranking.vocab)
    assert names[k] == " · ".join(w.word for w in words)


def test_lambda_one_is_probability_order_and_lower_favours_peculiar_words() -> None:
    # Word 0 is frequent everywhere; word 1 is rarer but the topic's own.
    beta = np.array([[0.5, 0.3, 0.2], [0.5, 0.1, 0.4]], dtype=np.float32)
    counts = np.array([100.0, 3.0, 50.0])
    assert rank(model(beta, counts), 1.0, 3).ids[0].tolist() == [0, 1, 2]
    assert rank(model(beta, counts), 0.0, 3).ids[0].tolist()[0] == 1


def test_without_the_streams_figures_p_is_the_mean_of_betas_columns() -> None:
    rng = np.random.default_rng(2)
    beta = rng.dirichlet(np.full(20, 0.5), size=4).astype(np.float32)
    assert np.allclose(marginal(model(beta, None)), beta.mean(axis=0))
    ranking = rank(model(beta, None), 0.4, 5)
    assert ranking.ids.tolist() == brute(beta.astype(np.float64), beta.mean(axis=0), 0.4, 5)
    never = marginal(model(beta, np.array([0.0] + [2.0] * 19)))
    assert np.isfinite(np.log(never)).all()  # a word never counted: half a count


def test_a_ranking_is_computed_once_per_rounded_lambda() -> None:
    rankings = Rankings(model(np.full((2, 4), 0.25, dtype=np.float32), None), 3)
    first = rankings.get(0.6)
    assert rankings.get(0.6041) is first and first.lam == 0.6
    assert rankings.get(0.61) is not first


@pytest.mark.slow
def test_relevance_on_the_topics_routes(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    """The published model's stream makes "apple" (topic 0's most probable word) common
    everywhere: at lambda 0 it drops below the topic's own words; weights stay probabilities."""
    beta = model_beta()
    counts = np.full(len(VOCAB), 10.0)
    counts[0] = 10_000.0
    stream = StreamFigures(
        counts, np.full(3, 1 / 3), np.zeros(0, np.int64), np.zeros((0, 3), np.float32)
    )
    publish_model(redis_client, beta, VOCAB, docs_seen=3000, gamma=0.1, stream=stream)
    plain = api.get("/topics/0", params={"top": 4}).json()
    assert plain["relevance"] is None and plain["words"][0]["word"] == "apple"
    ranked = api.get("/topics/0", params={"top": 4, "relevance": "0"})
    body = ranked.json()
    assert body["relevance"] == 0.0 and body["words"][-1]["word"] != "apple"
    weights = {w["word"]: w["weight"] for w in body["words"]}
    assert weights["banana"] == pytest.approx(float(beta[0, 1]), rel=1e-6)
    again = api.get(
        "/topics/0?top=4&relevance=0.001", headers={"If-None-Match": ranked.headers["etag"]}
    )
    assert again.status_code == 304  # rounded to 2 decimals: the same body
    listed = api.get("/topics", params={"relevance": "0.6", "uncertainty": "true"}).json()
    assert listed["relevance"] == 0.6 and len(listed["topics"]) == 3
    # The suggested name is the worker's, whatever the query asks.
    assert listed["topics"][1]["suggested_name"].count(" · ") == 2


@pytest.mark.slow
@pytest.mark.parametrize("value", ["-0.1", "1.5", "x", "nan", "inf", "0.5&relevance=0.6"])
def test_a_bad_relevance_is_a_422(api: TestClient, published: Published, value: str) -> None:
    response = api.get(f"/topics?relevance={value}")
    assert response.status_code == 422 and "relevance" in response.json()["detail"]


@pytest.mark.slow
def test_relevance_needs_the_mean_and_a_model(
    api: TestClient, published: Published, redis_client: redis.Redis
) -> None:
    response = api.get("/topics/1?relevance=0.5&estimate=sample")
    assert response.status_code == 409 and "estimate=sample" in response.json()["detail"]
    redis_client.delete("streamlda:model")
    response = api.get("/topics?relevance=0.5")
    assert response.status_code == 503 and "no model" in response.json()["detail"]
    wider = torch.cat([model_beta(), model_beta()[:1]])
    publish_model(redis_client, wider, VOCAB, docs_seen=3000, gamma=0.1)
    assert api.get("/topics?relevance=0.5").status_code == 503  # K 4 against the snapshot's 3
