"""Cleaning takes time linear in the page, whatever the page: each hostile shape at twice the
size takes about twice as long, and none takes a second at 100 kB (markup that only the parser
is slow on is bounded by the parse's time limit instead: see test_bounded_cleaner)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import pytest

from service.ingest.cleaning import clean_wikitext, skip_reason

# Each shape, made about ``n`` characters long.
SHAPES: dict[str, Callable[[int], str]] = {
    "unclosed refs": lambda n: "<ref>" * (n // 5),
    "heading of blanks": lambda n: "=" + " " * n + "x",
    "heading of blanks, closed": lambda n: "==" + " " * n + "x" + " " * n + "==",
    "residue heading of blanks": lambda n: "{{a}}\n= " + " " * n + "x",
    "template start of blanks": lambda n: "{{" + " " * n,
    "template names of blanks": lambda n: ("{{" + " " * 98) * (n // 100),
    "deep bare templates": lambda n: "{{" * (n // 4) + "}}" * (n // 4),
    "deep templates": lambda n: "{{a|" * (n // 6) + "}}" * (n // 6),
    "deep unclosed templates": lambda n: "{{a|" * (n // 4),
    "deep links": lambda n: "[[a|" * (n // 6) + "]]" * (n // 6),
    "empty parentheses": lambda n: "x" + " ()" * (n // 3) + " x",
    "blanks before punctuation": lambda n: "x" + " \u2003" * (n // 2) + ".",
    "parentheses of odd blanks": lambda n: "(" + "\u2003" * n,
    "magic word never closed": lambda n: "__" + "A" * n,
    "pipe trick": lambda n: "[[" + "(" * n + ")|]]",
    "comments never closed": lambda n: "<!--" * (n // 4),
    "equals signs": lambda n: "=" * n,
    "leftover tag never closed": lambda n: "<a" + "b" * n,
    "redirect of blanks": lambda n: " " * n + "x",
}
SMALL, LARGE = 50_000, 100_000
REPEATS = 3


def _seconds(text: str) -> float:
    """Best of a few runs of what a source does with one page (errors are the page's)."""
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        skip_reason("Title", text)
        with contextlib.suppress(Exception):
            clean_wikitext(text)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_hostile_shape_cleans_in_linear_time(shape: str) -> None:
    make = SHAPES[shape]
    small, large = _seconds(make(SMALL)), _seconds(make(LARGE))
    # A few milliseconds of allowance: timings that small are mostly the clock's noise.
    assert large <= 2.5 * small + 0.01, (shape, small, large)
    assert large < 1.0, (shape, large)
