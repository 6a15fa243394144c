"""benchmarks/chaos.py's arguments and report, without running ``up``."""

from __future__ import annotations

import pytest

from benchmarks import chaos


def test_kinds_and_kills_are_chosen_and_unknown_kinds_refused() -> None:
    args = chaos.parse_args(["--kinds", "redis", "--kills", "10"])
    assert (args.kinds, args.kills) == (["redis"], 10)
    assert chaos.parse_args([]).kinds == list(chaos.KINDS)
    with pytest.raises(SystemExit):
        chaos.parse_args(["--kinds", "redis,postgres"])


def test_the_report_gives_median_and_max_per_kind_and_the_reconciliation() -> None:
    kills = [
        chaos.Kill("redis", 0.0, api_s=0.0, docs_s=3.0, queued_s=2.0, redis_s=1.5, learn_s=1.0),
        chaos.Kill("redis", 30.0, api_s=0.0, docs_s=5.0, queued_s=4.0, redis_s=2.0, learn_s=4.0),
        chaos.Kill("redis", 60.0, api_s=0.0, docs_s=4.0, queued_s=3.0, redis_s=1.0),
        chaos.Kill("api", 90.0, api_s=2.5),
    ]
    totals = chaos.Totals(
        queued=100, learned=90, heldout=10, empty=0, dropped=0, in_stream=0, duplicates=0, rereads=0
    )
    text = chaos.report({"kills": kills, "availability": 0.95, "totals": totals})
    assert "redis        3    0.0 /  0.0 s     4.0 /  5.0 s" in text
    assert "learning resumes after Redis answers   2.5 /  4.0 s (1 missed)" in text
    assert "api          1    2.5 /  2.5 s" in text and "(1 missed)" in text.split("api")[1]
    assert "availability (polls the API answered): 95.0%" in text
    assert totals.unaccounted == 0 and "unaccounted 0" in text
