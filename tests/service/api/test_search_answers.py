"""The search answers kept: by topic or article (never by limit and offset), bounded in bytes,
least recently used first out, dropped with their model version; and the slots that cap the
answers being made."""

from __future__ import annotations

import orjson
import pytest
from fastapi import HTTPException

from service.api.infer.admission import Slots
from service.api.search.answers import Kept, KeptAnswers, rendered_answer


def kept(n: int, size: int = 100) -> Kept:
    return Kept(tuple(b'"' + b"x" * (size - 2) + b'"' for _ in range(n)), n)


def test_an_answer_is_the_same_json_as_rendered_whole() -> None:
    head = {"topic": 1, "model_version": "v", "docs_seen": 3, "total": 2, "offset": 0}
    articles = [{"id": "1", "title": "A"}, {"id": "2", "title": "B"}]
    rendered = rendered_answer(head, [orjson.dumps(a) for a in articles])
    assert rendered.body == orjson.dumps({**head, "articles": articles})
    assert rendered_answer({}, []).body == b'{"articles":[]}'


def test_the_least_recently_used_go_once_the_bytes_pass_the_bound() -> None:
    one = kept(10)
    answers = KeptAnswers(max_bytes=3 * one.size)
    for key in "abc":
        assert answers.get("v1", key) is None
        answers.put("v1", key, kept(10))
    assert answers.get("v1", "a") is not None  # now the most recently used
    answers.put("v1", "d", kept(10))
    assert answers.get("v1", "b") is None  # the least recently used went
    assert all(answers.get("v1", key) is not None for key in "acd")
    assert answers.bytes == 3 * one.size <= answers.max_bytes


def test_an_answer_larger_than_the_bound_is_not_kept() -> None:
    answers = KeptAnswers(max_bytes=1000)
    answers.get("v1", "a")
    answers.put("v1", "a", kept(100))
    assert answers.get("v1", "a") is None and answers.bytes == 0


def test_a_new_model_version_drops_the_old_answers() -> None:
    answers = KeptAnswers()
    answers.get("v1", "a")
    answers.put("v1", "a", kept(3))
    assert answers.get("v2", "a") is None and answers.bytes == 0
    answers.put("v1", "a", kept(3))  # made for the old version while v2 came: not kept
    assert answers.get("v2", "a") is None


def test_slots_past_the_limit_are_503_with_retry_after() -> None:
    slots = Slots(2, 3, "2 search answers are being made")
    with slots.taken(), slots.taken():
        with pytest.raises(HTTPException) as refused, slots.taken():
            pass
        assert refused.value.status_code == 503
        assert refused.value.headers == {"Retry-After": "3"}
        assert refused.value.detail == "busy: 2 search answers are being made; retry in 3 s"
    with slots.taken():  # freed
        assert slots.in_use == 1
    assert slots.in_use == 0
