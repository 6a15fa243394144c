"""MediaWiki pages-articles XML dumps (``.bz2``, ``.gz`` or plain ``.xml``), streamed.

The file is decompressed and parsed incrementally (``iterparse``) and every ``<page>`` is
dropped from the tree once read, so memory stays flat however large the dump. Only
main-namespace (ns 0) pages that are neither redirects nor disambiguation pages become
articles; the others are skipped and counted by reason.
"""

from __future__ import annotations

import bz2
import gzip
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from service.ingest.cleaning import clean_wikitext, skip_reason
from service.ingest.sources.base import Article, SkipCounter, SourceError, require_file


def _local(tag: str) -> str:
    """Tag name without its XML namespace ({http://www.mediawiki.org/xml/export-0.10/}page)."""
    return tag.rsplit("}", 1)[-1]


def _child(element: ET.Element, name: str) -> ET.Element | None:
    for child in element:
        if _local(child.tag) == name:
            return child
    return None


def _child_text(element: ET.Element, name: str) -> str | None:
    child = _child(element, name)
    return None if child is None else (child.text or "")


class DumpSource:
    """Articles of a pages-articles XML dump, in file order."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"dump:{self.path}"
        self.skipped = SkipCounter()
        require_file(self.path)

    def _open(self) -> IO[bytes]:
        if self.path.suffix == ".bz2":
            return bz2.open(self.path, "rb")
        if self.path.suffix == ".gz":
            return gzip.open(self.path, "rb")  # type: ignore[return-value]
        return self.path.open("rb")

    def __iter__(self) -> Iterator[Article]:
        pages = 0
        try:
            with self._open() as stream:
                root: ET.Element | None = None
                for event, element in ET.iterparse(stream, events=("start", "end")):
                    if root is None:
                        root = element
                    if event != "end" or _local(element.tag) != "page":
                        continue
                    pages += 1
                    article = self._article(element)
                    root.clear()  # forget every page read so far: memory stays flat
                    if article is not None:
                        yield article
        except ET.ParseError as exc:
            raise SourceError(f"malformed XML in {self.path} after {pages} pages: {exc}") from exc
        except (OSError, EOFError) as exc:
            raise SourceError(f"cannot read {self.path} after {pages} pages: {exc}") from exc

    def _article(self, page: ET.Element) -> Article | None:
        title = _child_text(page, "title")
        page_id = _child_text(page, "id")
        if not title or not page_id:
            self.skipped.skip("missing_fields")
            return None
        if (_child_text(page, "ns") or "0").strip() != "0":
            self.skipped.skip("namespace")
            return None
        if _child(page, "redirect") is not None:
            self.skipped.skip("redirect")
            return None
        revision = _child(page, "revision")
        wikitext = None if revision is None else _child_text(revision, "text")
        if wikitext is None:
            self.skipped.skip("no_revisions")
            return None
        reason = skip_reason(title, wikitext)
        if reason is not None:
            self.skipped.skip(reason)
            return None
        text = clean_wikitext(wikitext)
        if not text:
            self.skipped.skip("empty")
            return None
        return Article(id=page_id.strip(), title=title, text=text, source=self.name)
