"""The worker's recent rates: fresh and revisited documents a second, and fresh documents' wait
from their arrival in the queue to the step that learned them."""

from __future__ import annotations

import time

import pytest

from service.ingest.queue import entry_time
from service.learn.recent_rates import RecentRates


def test_an_entry_id_gives_the_time_redis_added_it() -> None:
    assert entry_time("1732625000123-0") == pytest.approx(1732625000.123)
    assert entry_time("1732625000123-17") == entry_time("1732625000123-0")


def test_waits_are_measured_from_arrival_and_summarised_by_quantiles() -> None:
    recent = RecentRates()
    assert recent.wait_quantiles() is None  # nothing learned yet
    now = time.time()
    recent.learned([now - w for w in range(1, 101)])  # waited 1 s to 100 s
    median, p95 = recent.wait_quantiles() or (0.0, 0.0)
    assert median == pytest.approx(50.5, abs=0.1)
    assert p95 == pytest.approx(95.05, abs=0.1)
    recent.learned([now + 5])  # a clock ahead of Redis's: no negative wait
    assert min(w for _, w in recent.waits) == 0.0


def test_waits_older_than_the_window_are_forgotten() -> None:
    recent = RecentRates(window_s=0.05)
    recent.learned([time.time() - 30])
    time.sleep(0.1)
    assert recent.wait_quantiles() is None
    recent.learned([time.time() - 2])
    median, p95 = recent.wait_quantiles() or (0.0, 0.0)
    assert median == p95 == pytest.approx(2.0, abs=0.1)
