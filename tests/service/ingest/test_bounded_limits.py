"""The bounded cleaner's time bound has a ceiling whatever the page's size, and a stop request
abandons the page being parsed at once (its child killed, a fresh one for the next page)."""

from __future__ import annotations

import threading
import time

import pytest

from service.ingest.bounded_clean import (
    PARSE_SECONDS,
    PARSE_SECONDS_MAX,
    STOP_POLL_SECONDS,
    BoundedCleaner,
    CleaningStopped,
)
from service.ingest.sources import ArticleSkipped

STAND_IN = "tests.service.ingest.stand_ins:clean"


def test_the_bound_grows_with_the_page_up_to_a_ceiling() -> None:
    cleaner = BoundedCleaner()  # no child until the first page
    assert cleaner.bound(0) == PARSE_SECONDS
    assert PARSE_SECONDS < cleaner.bound(100_000) < PARSE_SECONDS_MAX
    assert cleaner.bound(3_000_000) == cleaner.bound(4 * 1024**2) == PARSE_SECONDS_MAX
    assert not isinstance(CleaningStopped(), Exception)  # no per-article handler catches it


@pytest.mark.slow
def test_a_huge_hostile_page_costs_the_ceiling_not_its_size() -> None:
    """3 MB of unclosed ``<ref name=`` (the parser is quadratic on it) against a 1 s ceiling:
    without the ceiling it would get 62 s."""
    with BoundedCleaner(seconds_max=1.0) as cleaner:
        assert cleaner("Warm '''up'''.") == "Warm up."
        start = time.monotonic()
        with pytest.raises(ArticleSkipped) as skipped:
            cleaner("Lead. " + "<ref name=" * 300_000)
        took = time.monotonic() - start
        assert skipped.value.reason == "parse_timeout"
        assert "bound of 1.0 s" in skipped.value.detail
        assert cleaner("Next [[page]].") == "Next page."  # a fresh child serves the next
    assert took < 15, took  # 1 s of the child's CPU, however busy the machine


@pytest.mark.slow
def test_a_stop_abandons_the_page_being_parsed() -> None:
    stop = threading.Event()
    with BoundedCleaner(clean=STAND_IN, stop=stop) as cleaner:
        assert cleaner("fine") == "fine"
        timer = threading.Timer(0.5, stop.set)
        timer.start()
        start = time.monotonic()
        with pytest.raises(CleaningStopped):
            cleaner("HANG")  # would run to its 2 s bound, and to the wall's 20 s when busy
        late = time.monotonic() - start - 0.5
        timer.join()
        assert late < STOP_POLL_SECONDS + 1.0, late
        stop.clear()
        assert cleaner("fine again") == "fine again"
