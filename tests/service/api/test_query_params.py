"""The hot reads' parameters are parsed as the schema says (service/api/http/query_params.py)."""

from __future__ import annotations

import pytest

from service.api.http.query_params import (
    MAX_DIGITS,
    SHOWN_CHARS,
    SINCE,
    InvalidParameter,
    parse_query,
    topics_query,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"", {}),
        (b"since=3", {"since": 3}),
        (b"since=" + b"0" * 4400 + b"5", {"since": 5}),  # leading zeros: a small number
        (b"since=0", {"since": 0}),
        (b"other=x&since=7", {"since": 7}),  # names outside the schema are left alone
    ],
)
def test_integers_in_plain_digits_parse(raw: bytes, expected: dict[str, int]) -> None:
    assert parse_query(raw, SINCE) == expected


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b"since=" + b"9" * 4301, "less_than_equal"),  # int() would refuse it: never a 500
        (b"since=" + b"9" * (MAX_DIGITS + 1), "less_than_equal"),
        (b"since=x&since=3", "multiple_values"),
        (b"since=3&since=3", "multiple_values"),
        (b"since=3%0A", "int_parsing"),
        (b"since=%203", "int_parsing"),
        (b"since=1_000", "int_parsing"),
        (b"since=-1", "int_parsing"),
        (b"since=+1", "int_parsing"),
        (b"since=%D9%A3", "int_parsing"),  # an Arabic-Indic three: a digit, not ASCII
        (b"since=", "int_parsing"),
    ],
)
def test_anything_else_names_the_parameter(raw: bytes, kind: str) -> None:
    with pytest.raises(InvalidParameter) as raised:
        parse_query(raw, SINCE)
    assert raised.value.name == "since" and raised.value.where == "query"
    assert raised.value.kind == kind


def test_an_echoed_value_is_cut() -> None:
    with pytest.raises(InvalidParameter) as raised:
        parse_query(b"since=" + b"x" * 5000, SINCE)
    assert len(str(raised.value)) < SHOWN_CHARS + 100
    assert "5000 characters" in str(raised.value)


def test_topics_bounds_and_words() -> None:
    spec = topics_query(50, one=False)
    assert parse_query(b"top=50&uncertainty=true&sort=coherence&estimate=sample", spec) == {
        "top": 50,
        "uncertainty": True,
        "sort": "coherence",
        "estimate": "sample",
    }
    for bad in (b"top=0", b"top=51", b"uncertainty=1", b"uncertainty=True", b"sort=drift"):
        with pytest.raises(InvalidParameter):
            parse_query(bad, spec)
    assert "sort" not in topics_query(50, one=True)
