"""The file sources: JSON lines (``.gz`` too) and streamed pages-articles dumps."""

from __future__ import annotations

import bz2
import gzip
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.ingest.sources import SourceError, open_source
from service.ingest.sources.dump import DumpSource
from tests.support.corpora import DUMP, dump_pages, wikitext_records

EXPORT_NS = "http://www.mediawiki.org/xml/export-0.10/"


def test_jsonl_reads_plain_and_wikitext_records_and_counts_bad_lines(tmp_path: Path) -> None:
    wikitext = next(p for p in dump_pages() if p.title == "Aruba")
    lines = [
        json.dumps({"id": "1", "title": "Plain", "text": "Plain prose words.", "format": "plain"}),
        "{not json",
        json.dumps({"id": "2", "title": "No text"}),
        json.dumps(["a", "list"]),
        "",
        json.dumps(
            {"id": "3", "title": "Redirect", "text": "#REDIRECT [[X]]", "format": "wikitext"}
        ),
        json.dumps(
            {
                "id": "4",
                "title": "X (disambiguation)",
                "text": "X may be:\n* [[A]]",
                "format": "wikitext",
            }
        ),
        json.dumps(
            {
                "id": str(wikitext.pageid),
                "title": wikitext.title,
                "text": wikitext.wikitext,
                "format": "wikitext",
            }
        ),
        json.dumps({"title": "No id", "text": "Some text."}),
        json.dumps({"id": "5", "title": "Blank", "text": "  \n"}),
    ]
    path = tmp_path / "articles.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    source = open_source(f"jsonl:{path}")
    articles = list(source)
    assert [a.id for a in articles] == ["1", str(wikitext.pageid), "articles.jsonl.gz:9"]
    assert articles[0].text == "Plain prose words." and articles[0].source == f"jsonl:{path}"
    assert "{{" not in articles[1].text and "Aruba" in articles[1].text
    assert dict(source.skipped.counts) == {
        "malformed_json": 1,
        "missing_text": 2,
        "redirect": 1,
        "disambiguation": 1,
        "empty": 1,
    }


def test_jsonl_reads_a_shared_shard_in_order(tmp_path: Path) -> None:
    source = open_source(f"jsonl:{Path(DUMP).parent / 'dev-00.jsonl.gz'}")
    first = [a for _, a in zip(range(50), source, strict=False)]
    assert len(first) == 50 and first[0].title == "Grade I listed buildings in Lancashire"
    assert len({a.id for a in first}) == 50 and source.skipped.total == 0


def test_bad_source_specs_and_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="unknown source"):
        open_source("ftp:somewhere")
    with pytest.raises(SourceError, match="no such file"):
        open_source(f"jsonl:{tmp_path / 'missing.jsonl'}")
    with pytest.raises(SourceError, match="no such file"):
        open_source(f"dump:{tmp_path / 'missing.xml.bz2'}")
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(b'{"id": "1", "text": "ok"}\n' * 100)[:-20])
    with pytest.raises(SourceError, match="cannot read"):
        list(open_source(f"jsonl:{broken}"))


@pytest.mark.slow
def test_dump_yields_exactly_its_main_namespace_non_redirect_articles() -> None:
    source = DumpSource(DUMP)
    articles = list(source)
    # The oracle: the corpus build's own selection of this dump's usable articles.
    expected = {record["id"] for record in wikitext_records()}
    assert len(articles) == len(expected) == 98
    assert {a.id for a in articles} == expected
    assert dict(source.skipped.counts) == {"redirect": 99, "disambiguation": 8, "namespace": 1}
    ns0 = {str(p.pageid): p for p in dump_pages() if p.ns == 0 and not p.redirect}
    assert all(a.id in ns0 and a.title == ns0[a.id].title for a in articles)
    assert all("[[" not in a.text and "{{" not in a.text for a in articles)


def _synthetic_dump(path: Path, pages: int) -> None:
    """A dump of ``pages`` pages of 5 kB: one in ten a short article, the others talk pages
    (skipped unparsed), so the file is large while the cleaning work stays small."""
    filler = "Talk page words. " * 300

    def chunks() -> Iterator[str]:
        yield f'<mediawiki xmlns="{EXPORT_NS}" version="0.10" xml:lang="en">\n'
        yield "<siteinfo><sitename>Wikipedia</sitename></siteinfo>\n"
        for i in range(1, pages + 1):
            ns, text = (0, f"'''Page {i}''' is a [[test]] article.") if i % 10 == 0 else (1, filler)
            yield (
                f"<page><title>Page {i}</title><ns>{ns}</ns><id>{i}</id><revision>"
                f'<id>{i}0</id><text xml:space="preserve">{text}</text></revision></page>\n'
            )
        yield "</mediawiki>\n"

    with bz2.open(path, "wt", encoding="utf-8", compresslevel=1) as out:
        for chunk in chunks():
            out.write(chunk)


def _peak_while_iterating(path: Path) -> tuple[int, int]:
    tracemalloc.start()
    try:
        count = sum(1 for _ in DumpSource(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return count, peak


def test_dump_memory_does_not_grow_with_the_file(tmp_path: Path) -> None:
    small, large = tmp_path / "small.xml.bz2", tmp_path / "large.xml.bz2"
    _synthetic_dump(small, 200)
    _synthetic_dump(large, 1600)
    small_count, small_peak = _peak_while_iterating(small)
    large_count, large_peak = _peak_while_iterating(large)
    assert (small_count, large_count) == (20, 160)
    large_xml_bytes = len(bz2.decompress(large.read_bytes()))
    assert large_xml_bytes > 7_500_000
    # Eight times the pages, about the same peak: nothing accumulates per page.
    assert large_peak < 1.5 * small_peak + 200_000, (small_peak, large_peak)
    assert large_peak < large_xml_bytes / 10


def test_truncated_or_malformed_dumps_are_clear_errors(tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.xml.bz2"
    truncated.write_bytes(DUMP.read_bytes()[:200_000])
    with pytest.raises(SourceError, match=r"truncated\.xml\.bz2"):
        list(DumpSource(truncated))
    malformed = tmp_path / "malformed.xml"
    malformed.write_text(f'<mediawiki xmlns="{EXPORT_NS}"><page><title>A</title></mediawiki>')
    with pytest.raises(SourceError, match="malformed XML"):
        list(DumpSource(malformed))
