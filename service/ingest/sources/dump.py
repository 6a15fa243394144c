"""MediaWiki pages-articles XML dumps (``.bz2``, ``.gz`` or plain ``.xml``), streamed.

The file is decompressed and parsed incrementally, fed to the parser up to each ``</page>`` in
turn so that every page's end has a byte offset (where a restarted scraper carries on: the
dump's header, then the bytes after that page), and every ``<page>`` is dropped from the tree
once read, so memory stays flat however large the dump. Only main-namespace (ns 0) pages that
are neither redirects nor disambiguation pages become articles; the others are skipped and
counted by reason.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import replace
from typing import cast

from service.ingest.cleaning import clean_wikitext, skip_reason
from service.ingest.sources.base import Article, FileSource, Position, SourceError
from service.ingest.sources.files import READ_SIZE, DecompressedReader

PAGE_END = b"</page>"  # never in a page's text, where XML escapes "<"
PAGE_START = b"<page>"


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


class DumpSource(FileSource):
    """Articles of a pages-articles XML dump, in file order, from :attr:`start` on; each
    carries the position just past its page."""

    kind = "dump"

    def __iter__(self) -> Iterator[Article]:
        pages = self.start.count
        parser: ET.XMLPullParser = ET.XMLPullParser(events=("start", "end"))
        root: list[ET.Element] = []  # the <mediawiki> element, once seen

        def ended() -> Iterator[ET.Element]:
            """The pages the parser finished with what it was fed so far."""
            # "start" and "end" events carry elements
            events = cast(Iterator[tuple[str, ET.Element]], parser.read_events())
            for event, element in events:
                if not root:
                    root.append(element)
                if event == "end" and _local(element.tag) == "page":
                    yield element

        try:
            if self.start.offset:
                parser.feed(self._header())  # the root and siteinfo, then the pages from start
                list(ended())
            with DecompressedReader(self.path, self.start) as reader:
                offset = self.start.offset
                held = b""  # read, not yet fed: it may end inside a "</page>"
                while chunk := reader.read(READ_SIZE):
                    held += chunk
                    while (end := held.find(PAGE_END)) >= 0:
                        end += len(PAGE_END)
                        parser.feed(held[:end])
                        offset += end
                        held = held[end:]
                        for page in ended():
                            pages += 1
                            at, member_offset = reader.restart_point(offset)
                            article = self._article(page)
                            root[0].clear()  # forget every page read so far: memory stays flat
                            if article is not None:
                                yield replace(
                                    article, after=Position(offset, pages, at, member_offset)
                                )
                    keep = len(PAGE_END) - 1
                    if len(held) > keep:
                        parser.feed(held[:-keep])
                        offset += len(held) - keep
                        held = held[-keep:]
                        for page in ended():  # a page not ended by a literal "</page>"
                            pages += 1
                            article = self._article(page)
                            root[0].clear()
                            if article is not None:
                                yield article  # no position: a restart never skips past it
                parser.feed(held)
                parser.close()
                list(ended())
        except ET.ParseError as exc:
            raise SourceError(f"malformed XML in {self.path} after {pages} pages: {exc}") from exc
        except (OSError, EOFError) as exc:
            raise SourceError(f"cannot read {self.path} after {pages} pages: {exc}") from exc

    def _header(self) -> bytes:
        """The dump's bytes before its first page: the opening of <mediawiki> and <siteinfo>."""
        head = b""
        with DecompressedReader(self.path) as reader:
            while chunk := reader.read(READ_SIZE):
                head += chunk
                if (first := head.find(PAGE_START)) >= 0:
                    return head[:first]
        return head

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
