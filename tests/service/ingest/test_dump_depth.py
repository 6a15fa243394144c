"""The dump reader's work is O(1) a tag however deep a page nests: a page past MAX_DEPTH is
skipped as malformed_page in no time (the old reader took minutes on 200,000 levels), and the
pages around it are read as usual."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

from service.ingest.sources import open_source
from service.ingest.sources.dump import MAX_DEPTH
from tests.service.ingest.hostile import EXPORT_NS


def _page(page_id: int, inner: str = "", text: str = "Prose of the page.") -> str:
    return (
        f"<page><title>P{page_id}</title><ns>0</ns><id>{page_id}</id>{inner}<revision>"
        f"<id>7</id><contributor><username>u</username><id>3</id></contributor>"
        f'<text xml:space="preserve">{text}</text></revision></page>\n'
    )


def _nested(levels: int) -> str:
    return "<a>" * levels + "</a>" * levels


def test_a_page_nested_past_the_bound_is_skipped_at_o1_a_tag(tmp_path: Path) -> None:
    path = tmp_path / "deep.xml.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write(f'<mediawiki xmlns="{EXPORT_NS}">\n')
        out.write(_page(1, _nested(200_000)))  # 1.4 MB of nesting outside <text>
        out.write(_page(2))
        out.write(_page(3, _nested(MAX_DEPTH - 1)))  # <page> is one level: at the bound
        out.write(_page(4, _nested(MAX_DEPTH)))  # one past it
        out.write(_page(5, "<b>" * 300_000))  # opened, never closed
        out.write(_page(6, text="Kept &amp; read."))
        out.write("</mediawiki>\n")
    source = open_source(f"dump:{path}")
    start = time.perf_counter()
    articles = list(source)
    took = time.perf_counter() - start
    assert [(a.id, a.text) for a in articles] == [
        ("2", "Prose of the page."),
        ("3", "Prose of the page."),
        ("6", "Kept & read."),
    ]
    assert source.skipped.counts == {"malformed_page": 3}
    assert took < 2.0, took  # quadratic, 200,000 levels took minutes
