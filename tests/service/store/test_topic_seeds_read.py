"""Seeds read back from Redis are checked as the API checks what it writes: anything else is a
ValueError that says what is wrong (the reader skips and logs it)."""

from __future__ import annotations

import json

import pytest

from service.store.topic_seeds import SEED_STRENGTH_MIN, TopicSeeds, strength_error


def test_seeds_as_written_read_back() -> None:
    seeds = TopicSeeds(("film", "kraków"), 2.5)
    assert TopicSeeds.from_json(seeds.to_json()) == seeds
    assert TopicSeeds.from_json('{"words": ["film"], "strength": 3}').strength == 3.0


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ('{"words": ["film"], "strength": 1e-320}', "at least 0.001"),
        ('{"words": ["film"], "strength": NaN}', "finite"),
        ('{"words": ["film"], "strength": 1e400}', "finite"),
        ('{"words": ["film"], "strength": 1' + "0" * 400 + "}", "finite"),
        ('{"words": ["film"], "strength": "5"}', "a number"),
        ('{"words": ["film"], "strength": true}', "a number"),
        ('{"words": ["film"], "strength": 1e7}', "at most 1e+06"),
        ('{"words": "film", "strength": 2}', "a list"),
        ('{"words": [], "strength": 2}', "a list"),
        ('{"words": [5], "strength": 2}', "a list"),
        (json.dumps({"words": ["x" * 101], "strength": 2}), "101 characters"),
        ('{"words": ["Film"], "strength": 2}', "not a token"),
        ('{"words": ["two words"], "strength": 2}', "not a token"),
        ('{"words": ["film"]}', "not {"),
        ('{"words": ["film"], "strength": 2, "more": 1}', "not {"),
        ("[" * 100_000, "nested too deeply"),
        ("not json", "Expecting value"),
    ],
)
def test_anything_else_says_what_is_wrong(value: str, says: str) -> None:
    with pytest.raises(ValueError) as refused:
        TopicSeeds.from_json(value)
    assert says in str(refused.value)


def test_the_floor_is_part_of_the_range() -> None:
    assert strength_error(SEED_STRENGTH_MIN) is None
    assert strength_error(100.0, strongest=100.0) is None
    assert strength_error(100.5, strongest=100.0) is not None
