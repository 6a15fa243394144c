"""A listed article's row stays the five fields every API reads; how sure its share is travels
in a field of its own, which an older API leaves out and a newer one pairs with the rows."""

from __future__ import annotations

import json
from dataclasses import replace

from service.store.snapshot import Snapshot
from service.store.topic_article import TopicArticle, article_url

ROWS = [[["Orchard", "123", "wikipedia", 0.8, 2900]], [["Fruit", "f-7", "jsonl", 0.5, 2500]]]
BOUNDS = [[[0.71, 640.0]], [[0.32, 90.0]]]


def snapshot() -> Snapshot:
    return Snapshot(
        docs_seen=3000, updated_at=0.0, sampler="scir", step_size=0.1, device="cpu",
        vocab_size=4, topics=[[], []], sample_topics=[[], []], docs_per_s=0.0,
        tokens_per_s=0.0, counters={},
    )  # fmt: skip


def test_the_bounds_pair_with_the_rows() -> None:
    both = replace(snapshot(), topic_articles=ROWS, topic_article_bounds=BOUNDS)
    parsed = Snapshot.from_json(both.to_json())
    assert parsed.articles(0) == [TopicArticle("Orchard", "123", "wikipedia", 0.8, 2900, 0.71, 640)]
    assert [a.row() for a in parsed.articles(1)] == ROWS[1]  # five fields, as ever


def test_an_older_api_reads_the_rows_as_ever() -> None:
    """An older API unpacks exactly five fields a row and drops the fields it does not know
    (``Snapshot.known``): the rows are five fields still."""
    both = replace(snapshot(), topic_articles=ROWS, topic_article_bounds=BOUNDS)
    data = json.loads(both.to_json())
    assert all(len(row) == 5 for rows in data["topic_articles"] for row in rows)
    assert data["topic_article_bounds"] == BOUNDS


def test_rows_without_bounds_have_none() -> None:
    parsed = Snapshot.from_json(replace(snapshot(), topic_articles=ROWS).to_json())
    assert parsed.articles(0)[0].share_bound is None and parsed.articles(0)[0].tokens is None
    mismatched = replace(snapshot(), topic_articles=ROWS, topic_article_bounds=[[], []])
    assert Snapshot.from_json(mismatched.to_json()).articles(0)[0].share_bound is None


def test_only_the_live_source_links_to_wikipedia() -> None:
    assert article_url("wikipedia", "123") == "https://en.wikipedia.org/?curid=123"
    assert article_url("wikipedia", "not-a-page-id") is None
    assert article_url("jsonl", "123") is None
