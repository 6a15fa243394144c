"""Hostile input never stops a source: every damaged or pathological article among real ones is
skipped and counted under its reason, every good one comes through, a restart resumes past the
damage, and an overlong line or page is never held whole."""

from __future__ import annotations

import bz2
import gzip
import json
import time
import tracemalloc
from pathlib import Path

import pytest

from service.ingest.bounded_clean import BoundedCleaner
from service.ingest.sources import Article, FileSource, open_source
from tests.service.ingest.hostile import (
    EXPORT_NS,
    MAX_ARTICLE_BYTES,
    Expected,
    write_hostile_dump,
    write_hostile_jsonl,
)

Hostile = tuple[str, Expected]


@pytest.fixture(scope="module")
def hostile_jsonl(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    path = tmp_path_factory.mktemp("hostile") / "hostile.jsonl.bz2"
    return f"jsonl:{path}", write_hostile_jsonl(path, good=200)


@pytest.fixture(scope="module")
def hostile_dump(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    path = tmp_path_factory.mktemp("hostile") / "hostile.xml.bz2"
    return f"dump:{path}", write_hostile_dump(path)


def _open(spec: str, **kwargs: object) -> FileSource:
    source = open_source(spec, max_article_bytes=MAX_ARTICLE_BYTES, **kwargs)  # type: ignore[arg-type]
    assert isinstance(source, FileSource)
    return source


@pytest.mark.slow  # seconds: every hostile shape cleaned, twice
@pytest.mark.parametrize("corpus", ["hostile_jsonl", "hostile_dump"])
def test_a_hostile_file_gives_every_good_article_and_counts_each_bad_one(
    corpus: str, request: pytest.FixtureRequest
) -> None:
    spec, expected = request.getfixturevalue(corpus)
    source = _open(spec)
    articles: list[Article] = list(source)
    assert [a.id for a in articles] == expected.good
    assert source.skipped.counts == expected.skipped
    # A restart resumes past the damage before its position: exactly the rest, fewer skips.
    middle = len(articles) // 2
    after = articles[middle].after
    assert after is not None
    resumed = _open(spec)
    resumed.resume_from(after)
    assert [a.id for a in resumed] == expected.good[middle + 1 :]
    assert 0 < resumed.skipped.total < source.skipped.total


def _peak(source: FileSource) -> tuple[list[str], int]:
    tracemalloc.start()
    try:
        ids = [a.id for a in source]
        return ids, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_overlong_line_is_skipped_without_being_held(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl.bz2"
    long_text = "word " * 1_000_000  # 5 MB on one line: held, it would be over the peak below
    lines = [
        json.dumps({"id": "1", "title": "A", "text": "Short prose."}),
        json.dumps({"id": "2", "title": "Long", "text": long_text}),
        json.dumps({"id": "3", "title": "B", "text": "More prose."}),
    ]
    path.write_bytes(bz2.compress(("\n".join(lines) + "\n").encode()))
    source = open_source(f"jsonl:{path}", max_article_bytes=100_000)
    assert isinstance(source, FileSource)
    ids, peak = _peak(source)
    assert ids == ["1", "3"] and source.skipped.counts == {"too_large": 1}
    assert peak < 2_000_000, peak  # a few line limits, not the line


def test_an_overlong_dump_page_is_skipped_without_being_held(tmp_path: Path) -> None:
    path = tmp_path / "long.xml.gz"

    def page(page_id: int, text: str) -> str:
        return (
            f"<page><title>P{page_id}</title><ns>0</ns><id>{page_id}</id><revision>"
            f'<text xml:space="preserve">{text}</text></revision></page>\n'
        )

    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write(f'<mediawiki xmlns="{EXPORT_NS}">\n')
        out.write(page(1, "Short prose."))
        out.write(page(2, "word &amp; " * 2_000_000))  # 22 MB of XML, 12 MB of text
        out.write(page(3, "More prose."))
        out.write("</mediawiki>\n")
    source = open_source(f"dump:{path}", max_article_bytes=100_000)
    assert isinstance(source, FileSource)
    ids, peak = _peak(source)
    assert ids == ["1", "3"] and source.skipped.counts == {"too_large": 1}
    assert peak < 2_000_000, peak


@pytest.mark.slow
def test_a_page_past_the_parse_bounds_is_skipped_and_the_source_goes_on(
    tmp_path: Path,
) -> None:
    """A stand-in parser that hangs, allocates without end or crashes costs its page only."""
    path = tmp_path / "pages.jsonl"
    words = ["fine one", "HANG", "fine two", "ALLOCATE", "fine three", "CRASH", "fine four"]
    with path.open("w") as out:
        for i, word in enumerate(words):
            record = {"id": str(i), "title": word, "text": word, "format": "wikitext"}
            out.write(json.dumps(record) + "\n")
    cleaner = BoundedCleaner(
        seconds=1.0,
        seconds_per_mb=0.0,
        memory_bytes=256 * 1024 * 1024,
        clean="tests.service.ingest.stand_ins:clean",
    )
    with cleaner:
        source = _open(f"jsonl:{path}", clean=cleaner)
        start = time.monotonic()
        texts = [a.text for a in source]
        took = time.monotonic() - start
    assert texts == ["fine one", "fine two", "fine three", "fine four"]
    assert source.skipped.counts == {"parse_timeout": 1, "parse_memory": 1, "unparsable": 1}
    assert cleaner.restarts == 3
    assert took < 15, took  # the time bound, and three fresh children
