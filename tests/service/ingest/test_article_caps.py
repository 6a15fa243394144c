"""Every source caps an article's title and id (service/store/article_limits.py): a longer
title is cut and counted, a longer id is skipped and counted, whatever the file holds. The live
source's part is in test_wikipedia_responses.py, the stream's in test_article_caps_stream.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.ingest.sources import ArticleSkipped, SkipCounter, open_source
from service.ingest.sources.base import cut_title
from service.store.article_limits import ARTICLE_ID_CHARS, TITLE_CHARS

TEXT = "A plain article about rivers, hills and the towns between them."


def test_a_title_is_cut_with_an_ellipsis_and_an_id_is_bounded() -> None:
    assert cut_title("t" * TITLE_CHARS) == "t" * TITLE_CHARS
    cut = cut_title("word " * TITLE_CHARS)
    assert len(cut) <= TITLE_CHARS and cut.startswith("word word") and cut.endswith("\u2026")
    skipped = SkipCounter()
    longest = "1" * ARTICLE_ID_CHARS
    assert skipped.capped(longest, "Title", "here") == (longest, "Title")
    with pytest.raises(ArticleSkipped, match="id_too_long"):
        skipped.capped("1" * (ARTICLE_ID_CHARS + 1), "Title", "here")
    assert skipped.capped("2", "t" * 10_000, "here")[1] == "t" * (TITLE_CHARS - 1) + "\u2026"
    assert skipped.truncated == {"title": 1} and skipped.total == 0


def test_a_jsonl_title_of_8_mb_is_cut_and_a_long_id_skipped(tmp_path: Path) -> None:
    records = [
        {"id": "huge-title", "title": "T" * 8_000_000, "text": TEXT},
        {"id": "x" * (ARTICLE_ID_CHARS + 1), "title": "Long id", "text": TEXT},
        {"id": "i" * ARTICLE_ID_CHARS, "title": "Longest id", "text": TEXT},
    ]
    path = tmp_path / "caps.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    source = open_source(f"jsonl:{path}")
    articles = list(source)
    assert [a.id for a in articles] == ["huge-title", "i" * ARTICLE_ID_CHARS]
    assert len(articles[0].title) == TITLE_CHARS
    assert source.skipped.counts == {"id_too_long": 1}
    assert source.skipped.truncated == {"title": 1}


def _page(page_id: str, title: str) -> str:
    return (
        f"<page><title>{title}</title><ns>0</ns><id>{page_id}</id>"
        f'<revision><id>1</id><text xml:space="preserve">{TEXT}</text></revision></page>\n'
    )


def test_a_dump_title_is_cut_and_a_long_id_skipped(tmp_path: Path) -> None:
    path = tmp_path / "caps.xml"
    pages = _page("1", "T" * 100_000) + _page("9" * 300, "Long id") + _page("2", "Short")
    path.write_text(f"<mediawiki>\n{pages}</mediawiki>\n")
    source = open_source(f"dump:{path}")
    articles = list(source)
    assert [(a.id, len(a.title)) for a in articles] == [("1", TITLE_CHARS), ("2", 5)]
    assert source.skipped.counts == {"id_too_long": 1}
    assert source.skipped.truncated == {"title": 1}
