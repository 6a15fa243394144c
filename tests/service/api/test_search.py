"""The search routes against a brute-force ranking over the same published rows: a topic's
articles by the bound on their share, a text's and an article's nearest by the Hellinger
distance between whole distributions; with their errors (404, 422, 503) and one row per
article."""

from __future__ import annotations

import numpy as np
import pytest
import redis
from fastapi.testclient import TestClient

from lda.search import share_bound
from service.api.app import create_app
from service.settings import Settings
from service.store.published_model import publish_model
from service.store.search import IndexRows
from tests.service.conftest import VOCAB, FreshClient, Published

pytestmark = pytest.mark.slow

N, S, K = 80, 2, 3


def index_rows(seed: int = 0) -> IndexRows:
    """N articles over K = 3 topics, each keeping its two largest shares; article "7" twice
    (a redelivery), its later row newer."""
    generator = np.random.default_rng(seed)
    theta = generator.dirichlet(np.full(K, 0.3), size=N)
    order = np.argsort(-theta, axis=1, kind="stable")[:, :S]
    shares = np.take_along_axis(theta, order, axis=1)
    ids = [str(i) for i in range(N)]
    ids[N - 1] = "7"
    return IndexRows(
        refs=[(f"Article {i}", ids[i], "wikipedia") for i in range(N)],
        topics=order.astype(np.int16),
        shares=shares.astype(np.float32),
        tokens=generator.integers(10, 3000, size=N).astype(np.float32),
        at=np.arange(N, dtype=np.int64),
        n_topics=K,
    )


def dense(rows: IndexRows) -> np.ndarray:
    """Each row as a distribution over K topics, its unkept mass spread evenly."""
    out = np.zeros((len(rows.refs), K))
    for i in range(len(rows.refs)):
        left = max(0.0, 1.0 - float(rows.shares[i].sum(dtype=np.float64)))
        out[i] = left / (K - S)
        out[i, rows.topics[i]] = rows.shares[i]
    return out / out.sum(1, keepdims=True)


def one_per_id(rows: IndexRows) -> list[int]:
    """Row numbers kept: all but article 7's older row."""
    return [i for i in range(N) if i != 7]


@pytest.fixture
def with_index(redis_client: redis.Redis, published: Published) -> IndexRows:
    rows = index_rows()
    publish_model(redis_client, published.beta, VOCAB, docs_seen=3000, gamma=0.1, index=rows)
    return rows


def ids_of(answer: dict) -> list[str]:
    return [a["id"] for a in answer["articles"]]


@pytest.mark.parametrize(("topic", "limit", "offset"), [(0, 10, 0), (1, 7, 5), (2, 100, 0)])
def test_a_topics_articles_are_the_brute_force_ranking(
    api: TestClient, with_index: IndexRows, topic: int, limit: int, offset: int
) -> None:
    rows, kept = with_index, one_per_id(with_index)
    candidates = [(i, j) for i in kept for j in range(S) if rows.topics[i, j] == topic]
    bound = {
        i: float(share_bound(np.float64(rows.shares[i, j]), np.float64(rows.tokens[i]), K))
        for i, j in candidates
    }
    expected = sorted(bound, key=lambda i: (-bound[i], i))
    answer = api.get(f"/topics/{topic}/articles", params={"limit": limit, "offset": offset})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["total"] == len(expected)
    assert ids_of(body) == [rows.refs[i][1] for i in expected[offset : offset + limit]]
    for article in body["articles"]:
        assert 0 <= article["share_bound"] <= 1
        assert article["url"] == f"https://en.wikipedia.org/?curid={article['id']}"


def test_similar_is_the_brute_force_nearest(api: TestClient, with_index: IndexRows) -> None:
    text = "violin cello opera sonata violin engine"
    pi = np.array(api.post("/infer", json={"text": text}).json()["proportions"])
    kept = one_per_id(with_index)
    distance = np.sqrt(np.clip(1 - np.sqrt(dense(with_index) * pi).sum(1), 0, None))
    expected = sorted(kept, key=lambda i: (round(distance[i], 5), i))[:9]
    answer = api.post("/similar", json={"text": text, "limit": 9})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert [a["distance"] for a in body["articles"]] == pytest.approx(distance[expected], abs=1e-5)
    assert body["topics"][0]["id"] == 2  # the music topic
    assert set(ids_of(body)) >= {with_index.refs[i][1] for i in expected[:5]}


def test_an_articles_neighbours_leave_it_out(api: TestClient, with_index: IndexRows) -> None:
    kept = one_per_id(with_index)
    table = dense(with_index)
    row = 3
    distance = np.sqrt(np.clip(1 - np.sqrt(table * table[row]).sum(1), 0, None))
    expected = sorted((i for i in kept if i != row), key=lambda i: (round(distance[i], 5), i))
    body = api.get("/articles/3/similar", params={"limit": 6}).json()
    assert body["article"]["id"] == "3" and "3" not in ids_of(body)
    assert [a["distance"] for a in body["articles"]] == pytest.approx(
        distance[expected[:6]], abs=1e-5
    )
    assert api.get("/articles/7/similar").json()["article"]["docs_seen"] == N - 1  # the newer


def test_the_routes_refuse_what_the_schema_does_not_allow(
    api: TestClient, with_index: IndexRows
) -> None:
    assert api.get("/topics/3/articles").status_code == 404
    assert api.get("/articles/nope/similar").status_code == 404
    for params in ({"limit": 0}, {"limit": 101}, {"limit": "ten"}, {"offset": -1}):
        assert api.get("/topics/0/articles", params=params).status_code == 422, params
    assert api.get("/articles/3/similar", params={"limit": 101}).status_code == 422
    for body in (
        {"text": ""}, {"text": "opera", "limit": 0}, {"text": "a", "extra": 1}, {},
        {"text": "opera", "limit": "5"}, {"text": "opera", "limit": True},
        {"text": "opera", "limit": 2.5}, {"text": "opera", "limit": 101},
    ):  # fmt: skip
        assert api.post("/similar", json=body).status_code == 422, body
    assert len(api.post("/similar", json={"text": "opera", "limit": 5.0}).json()["articles"]) == 5


def test_without_kept_articles_search_is_unavailable(api: TestClient, published: Published) -> None:
    assert api.get("/topics/0/articles").status_code == 503
    assert api.post("/similar", json={"text": "opera"}).status_code == 503


def test_pages_within_and_past_the_kept_ones_are_one_ranking(
    api: TestClient, settings: Settings, with_index: IndexRows
) -> None:
    """With search_limit_max = 5, a topic's first 5 articles are kept and sliced, the pages past
    them rendered each time: every page, and pages that straddle the two, read as one list, the
    one the default bound keeps whole."""
    expected = api.get("/topics/1/articles?limit=100").json()
    with FreshClient(create_app(settings.updated(search_limit_max=5))) as small:
        whole = []
        for offset in range(0, expected["total"] + 5, 5):
            page = small.get(f"/topics/1/articles?limit=5&offset={offset}").json()
            assert page["total"] == expected["total"]
            whole += ids_of(page)
        assert whole == ids_of(expected)
        for limit, offset in [(3, 0), (3, 4), (5, 2), (1, 5), (4, 17)]:
            page = small.get(f"/topics/1/articles?limit={limit}&offset={offset}").json()
            assert ids_of(page) == whole[offset : offset + limit], (limit, offset)
        nearest = ids_of(small.get("/articles/3/similar?limit=5").json())
        assert nearest == ids_of(api.get("/articles/3/similar?limit=5").json())
        assert ids_of(small.get("/articles/3/similar?limit=2").json()) == nearest[:2]
