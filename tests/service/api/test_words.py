"""``GET /words/{word}/topics``: the topics a word ranks highest in, from the published model;
a word outside the vocabulary, or no word, is a 404 that says so."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient

from service.api.reads.word_topics import SLICE_WORDS, ranked, word_ranks
from tests.service.conftest import Published


def test_a_words_rank_counts_the_words_more_probable_in_each_topic() -> None:
    """Against a brute-force count, over more words than one slice, with ties."""
    rng = np.random.default_rng(0)
    beta = rng.dirichlet(np.full(SLICE_WORDS + 900, 0.1), size=7).astype(np.float32)
    beta[:, 5] = beta[:, 6]  # a tie: neither counts the other
    for w in (0, 5, 6, SLICE_WORDS + 17):
        brute = [(beta[k] > beta[k, w]).sum() + 1 for k in range(7)]
        assert word_ranks(beta, w).tolist() == brute
    cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    order, ranks = ranked(beta, 3, cache)
    assert sorted(ranks[order].tolist()) == ranks[order].tolist()  # best rank first
    assert ranked(beta, 3, cache)[0] is order  # kept for the next asker


@pytest.mark.slow
def test_the_topics_of_a_word_best_rank_first(api: TestClient, published: Published) -> None:
    body = api.get("/words/Violin/topics").json()  # the tokeniser's lower case
    assert body["word"] == "violin" and body["word_id"] == 9
    assert body["docs_seen"] == 3000 and body["model_version"] == published.version
    first, *rest = body["topics"]
    assert (first["topic"], first["rank"]) == (2, 2)  # second to "sonata" in the music topic
    assert first["probability"] == pytest.approx(float(published.beta[2, 9]), rel=1e-6)
    assert first["top_words"][:4] == ["sonata", "violin", "cello", "opera"]
    assert [t["rank"] for t in rest] == [5, 5]  # behind each other topic's four words
    assert len(api.get("/words/violin/topics", params={"top": 1}).json()["topics"]) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("word", "says"),
    [
        ("zebra", "'zebra' is not in the model's vocabulary of 12 words"),
        ("cello opera", "'cello opera' is 2 words to the tokeniser"),
        ("1234", "'1234' is no word to the tokeniser"),
    ],
)
def test_what_is_not_one_word_of_the_vocabulary_is_a_clear_404(
    api: TestClient, published: Published, word: str, says: str
) -> None:
    response = api.get(f"/words/{word}/topics")
    assert response.status_code == 404 and response.json()["detail"].startswith(says)


@pytest.mark.slow
def test_a_bad_top_is_refused_and_no_model_is_a_503(
    api: TestClient, published: Published, redis_client
) -> None:
    for top in ("0", "x", "1.5"):
        assert api.get("/words/violin/topics", params={"top": top}).status_code == 422
    redis_client.flushall()
    assert api.get("/words/violin/topics").status_code == 503
