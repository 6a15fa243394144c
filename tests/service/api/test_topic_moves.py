"""Topics that moved, as the API serves them: the live topics under their numbers, a gone
number's 410 (merged into which, or retired, and when) on every per-topic route, a never-used
number's 404, and the moves newest first (/topics/events); with K fixed, nothing changes.

The state is a real learner's after real moves (tests/service/api/shaped.py), published by the
worker's publisher to a real Redis and read through the real app.
"""

from __future__ import annotations

import json

import pytest
import redis
from fastapi.testclient import TestClient

from lda.vocab import Vocabulary
from service.api.reads.bodies import iso
from service.keys import SNAPSHOT_KEY, TOPIC_MOVES_KEY
from service.learn.evaluator import Scored
from service.learn.live_topics import LiveTopics
from service.store.topic_names import read_topic_names
from service.store.topic_seeds import read_topic_seeds
from tests.service.api import shaped
from tests.service.conftest import ADMIN_TOKEN

pytestmark = pytest.mark.slow

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


@pytest.fixture
def moved(api: TestClient, redis_client: redis.Redis) -> TestClient:
    """The app, serving the shaped learner of tests/service/api/shaped.py."""
    shaped.publish(redis_client, shaped.shaped_model())
    return api


def _when(move: int) -> dict[str, object]:
    docs, at = shaped.AT[move]
    return {"docs_seen": docs, "at": iso(at)}


def test_topics_lists_the_live_topics_by_number(moved: TestClient) -> None:
    topics = moved.get("/topics").json()["topics"]
    assert [t["id"] for t in topics] == shaped.LIVE
    sizes = [t["size"] for t in topics]  # slots 1, 3, 4 of six, as shares of the live ones
    assert sizes == pytest.approx([2 / 11, 4 / 11, 5 / 11])
    for number in shaped.LIVE:
        one = moved.get(f"/topics/{number}")
        assert one.status_code == 200 and one.json()["id"] == number
    born = moved.get("/topics/5").json()["words"][0]["word"]
    assert born in {"sonata", "violin", "cello"}  # born from documents of those words


def test_a_merged_number_is_gone_into_the_live_topic_that_holds_it(moved: TestClient) -> None:
    for number, move in ((1, 0), (0, 4)):  # 1 went into 0, which went into 3: both now in 3
        response = moved.get(f"/topics/{number}")
        assert response.status_code == 410, response.text
        body = response.json()
        assert body["id"] == number and body["merged_into"] == 3
        assert body["merged_at"] == _when(move) and body["retired_at"] is None
        assert "merged into topic 3" in body["detail"]


def test_a_retired_number_is_gone_since_its_retirement(moved: TestClient) -> None:
    response = moved.get("/topics/2")
    assert response.status_code == 410
    body = response.json()
    assert body["retired_at"] == _when(1) and body["merged_into"] is None
    assert body["merged_at"] is None and "retired" in body["detail"]


def test_a_number_never_used_is_not_found(moved: TestClient) -> None:
    for number in (shaped.NEVER, 1000):
        response = moved.get(f"/topics/{number}")
        assert response.status_code == 404 and "ever numbered so" in response.json()["detail"]


def test_every_per_topic_route_answers_a_gone_number_alike(
    moved: TestClient, redis_client: redis.Redis
) -> None:
    gone = moved.get("/topics/1").json()
    answers = [
        moved.get("/topics/1/history"),
        moved.get("/topics/1?estimate=sample&top=3"),
        moved.get("/topics/1/articles"),
        moved.put("/admin/topics/1/name", json={"name": "Old"}, headers=AUTH),
        moved.delete("/admin/topics/1/name", headers=AUTH),
        moved.put("/admin/topics/1/seeds", json={"words": ["violin"]}, headers=AUTH),
        moved.delete("/admin/topics/1/seeds", headers=AUTH),
    ]
    for response in answers:
        assert (response.status_code, response.json()) == (410, gone), response.request.url
    assert moved.get("/topics/2/history").status_code == 410
    assert moved.get(f"/topics/{shaped.NEVER}/history").status_code == 404
    assert read_topic_names(redis_client) == {} and read_topic_seeds(redis_client)[1] == {}


def test_a_live_number_is_named_and_seeded_by_number(
    moved: TestClient, redis_client: redis.Redis
) -> None:
    assert moved.put("/admin/topics/5/name", json={"name": "Strings"}, headers=AUTH).json() == {
        "id": 5,
        "name": "Strings",
    }
    assert read_topic_names(redis_client) == {5: "Strings"}
    listed = {t["id"]: t["name"] for t in moved.get("/topics").json()["topics"]}
    assert listed == {5: "Strings", 3: None, 4: None}
    assert moved.get("/topics/5").json()["name"] == "Strings"
    seeded = moved.put("/admin/topics/4/seeds", json={"words": ["delta"]}, headers=AUTH)
    assert seeded.status_code == 200 and 4 in read_topic_seeds(redis_client)[1]


def test_the_model_and_kept_articles_carry_the_numbers(moved: TestClient) -> None:
    inferred = moved.post("/infer", json={"text": "violin cello sonata violin"}).json()
    assert inferred["topic_ids"] == shaped.LIVE and len(inferred["proportions"]) == 3
    assert {t["id"] for t in inferred["topics"]} == set(shaped.LIVE)
    word = moved.get("/words/violin/topics?top=3").json()
    assert {t["topic"] for t in word["topics"]} == set(shaped.LIVE)
    violin = moved.get("/topics/5/articles").json()  # kept in slot 1: topic 5
    assert [a["title"] for a in violin["articles"]] == ["Violin"] and violin["topic"] == 5
    assert violin["articles"][0]["topics"] == [{"id": 5, "share": 0.8}, {"id": 3, "share": 0.2}]
    delta = moved.get("/topics/4/articles").json()["articles"]  # its slot 2 share: freed
    assert [a["title"] for a in delta] == ["Delta"] and delta[0]["topics"] == [
        {"id": 4, "share": 0.6}
    ]


def test_a_topics_history_follows_its_number(moved: TestClient, redis_client: redis.Redis) -> None:
    """A point scored over the six slots is kept for the live ones, each under its number."""
    rows = [[i, i + 1] for i in range(0, 12, 2)]  # slot s's top words: words 2s, 2s + 1
    topics = {"words": rows, "coherence": [0.1 * s for s in range(6)], "drift": None}
    scored = Scored(600, 100.0, 100.0, 0.2, 0.5, topics, {})
    model, vocab = shaped.shaped_model(), Vocabulary(shaped.WORDS)
    live = LiveTopics.of(model.topic_ids)
    shaped.publisher(redis_client).topics_scored(scored, vocab, [1 / 6] * 6, live)
    points = moved.get("/topics/5/history").json()["points"]  # slot 1
    assert [(p["docs_seen"], p["words"], p["coherence"]) for p in points] == [
        (600, ["cherry", "grape"], 0.1)
    ]
    assert moved.get("/topics/4/history").json()["points"][0]["words"] == shaped.WORDS[8:10]
    assert moved.get("/topics/0/history").status_code == 410


def test_events_are_the_moves_newest_first(moved: TestClient) -> None:
    response = moved.get("/topics/events")
    assert response.status_code == 200
    body = response.json()
    assert body["total"] == body["kept"] == 5 and body["live"] == 3
    assert body["totals"] == {"birth": 2, "merge": 2, "retire": 1}
    events = body["events"]
    assert [(e["kind"], e["topics"]) for e in events] == [
        ("merge", [3, 0]),
        ("birth", [5]),
        ("birth", [4]),
        ("retire", [2]),
        ("merge", [0, 1]),
    ]
    assert [{"docs_seen": e["docs_seen"], "at": e["at"]} for e in events] == [
        _when(m) for m in (4, 3, 2, 1, 0)
    ]
    merge, birth, retire = events[0], events[1], events[3]
    assert len(merge["before"]) == 2 and len(merge["after"]) == 1
    assert birth["before"] == [] and len(birth["after"][0]) == 3
    assert len(retire["before"]) == 1 and retire["after"] == []
    page = moved.get("/topics/events?limit=2&offset=1").json()
    assert page["events"] == events[1:3] and (page["limit"], page["offset"]) == (2, 1)
    assert moved.get("/topics/events?offset=5").json()["events"] == []
    again = moved.get("/topics/events", headers={"If-None-Match": response.headers["etag"]})
    assert again.status_code == 304
    assert moved.get("/topics/events?limit=0").status_code == 422
    assert moved.get("/topics/events?limit=201").status_code == 422


def test_a_fixed_k_publishes_and_serves_as_before(
    api: TestClient, redis_client: redis.Redis
) -> None:
    shaped.publish(redis_client, shaped.fixed_model())
    assert redis_client.exists(TOPIC_MOVES_KEY) == 0
    assert "topic_ids" not in json.loads(redis_client.get(SNAPSHOT_KEY) or b"{}")
    assert redis_client.hget("streamlda:model", "topic_ids") is None
    assert [t["id"] for t in api.get("/topics").json()["topics"]] == [0, 1, 2, 3]
    missing = api.get("/topics/4")
    assert missing.status_code == 404
    assert missing.json() == {"detail": "no topic 4: topic ids are 0 to 3"}
    assert "topic_ids" not in api.post("/infer", json={"text": "violin"}).json()
    events = api.get("/topics/events").json()
    assert events == {
        "total": 0,
        "kept": 0,
        "offset": 0,
        "limit": 20,
        "totals": {"birth": 0, "merge": 0, "retire": 0},
        "live": None,
        "events": [],
    }


def test_metrics_count_live_topics_and_moves_by_kind(moved: TestClient) -> None:
    lines = moved.get("/metrics").text.splitlines()
    assert "streamlda_topics_live 3.0" in lines
    assert "streamlda_topics 3.0" in lines  # the topics served: the live ones
    for kind, count in (("birth", 2), ("merge", 2), ("retire", 1)):
        assert f'streamlda_topic_moves_total{{kind="{kind}"}} {count}.0' in lines
    assert "# TYPE streamlda_topic_moves_total counter" in lines


def test_metrics_of_a_fixed_k_are_as_before(api: TestClient, redis_client: redis.Redis) -> None:
    shaped.publish(redis_client, shaped.fixed_model())
    text = api.get("/metrics").text
    assert "streamlda_topics 4.0" in text.splitlines()
    assert "streamlda_topics_live" not in text and "streamlda_topic_moves" not in text
