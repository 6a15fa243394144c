"""MediaWiki pages-articles XML dumps (``.bz2``, ``.gz`` or plain ``.xml``), streamed.

The file is decompressed and cut into pages at each ``<page>`` and ``</page>``, and every page
is parsed on its own as it streams in: its end has a byte offset (where a restarted scraper
carries on), and a page that is not well-formed XML, or nests elements over ``MAX_DEPTH`` deep,
is that page's problem (skipped as ``malformed_page``), not the dump's. The reader keeps only
the depth and the first few names of the path to the current element, so each tag costs O(1)
however deep the page. Only a page's title, namespace, id, redirect mark and text are kept, the
text no further than ``max_article_bytes`` (a longer page is skipped as ``too_large`` and the
rest of it read past, never held), so memory stays flat however large the dump or its pages.
Only main-namespace (ns 0) pages that are neither redirects nor disambiguation pages become
articles; the others are skipped and counted by reason, as are pages the cleaner cannot handle
(``unparsable``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from service.ingest.cleaning import clean_or_skip, skip_reason
from service.ingest.sources.base import (
    Article,
    ArticleSkipped,
    FileSource,
    Position,
    SourceError,
    too_large,
)
from service.ingest.sources.files import READ_SIZE, DecompressedReader
from service.store.article_limits import ARTICLE_ID_CHARS, TITLE_CHARS

PAGE_END = b"</page>"  # never in a page's text, where XML escapes "<"
PAGE_START = b"<page>"
# Characters kept of a page's title, namespace or id (the rest is not read into memory): one
# past the longest kept, so a longer title or id is seen to be longer (SkipCounter.capped).
FIELD_CHARS = max(TITLE_CHARS, ARTICLE_ID_CHARS) + 1
# Bytes of XML a page may take per byte of its text's bound: escapes ("&quot;") and markup.
XML_BYTES_PER_TEXT_BYTE = 8
# The elements a page's reader keeps, by their path from <page> (at most three deep).
FIELDS: dict[tuple[str, ...], str] = {
    ("page", "title"): "title",
    ("page", "ns"): "ns",
    ("page", "id"): "id",
}
TEXT = ("page", "revision", "text")
REDIRECT = ("page", "redirect")
# Names kept of the path to the current element: as deep as any element above is kept.
KEPT_DEPTH = len(TEXT)
# Deepest nesting of elements a page may have (a real one has 4: page/revision/contributor/id);
# a deeper page is skipped as malformed_page, so the reader's work is O(1) a tag.
MAX_DEPTH = 32


class _TooDeep(Exception):
    """A page nests elements deeper than MAX_DEPTH (raised inside the XML parser's feed)."""


def _local(tag: str) -> str:
    """Tag name without its XML namespace ({http://www.mediawiki.org/xml/export-0.10/}page)."""
    return tag.rsplit("}", 1)[-1]


@dataclass
class _Page:
    """What is kept of one page: its fields, redirect mark and text (up to ``most`` chars)."""

    most: int
    fields: dict[str, str] = field(default_factory=dict)
    redirect: bool = False
    text: list[str] | None = None  # None: the page has no revision text
    text_chars: int = 0
    too_large: bool = False
    depth: int = 0  # elements open, <page> included
    path: list[str] = field(default_factory=list)  # the first KEPT_DEPTH names of the path
    pieces: list[str] | None = None
    pieces_chars: int = 0
    in_text: bool = False  # inside the revision's <text>: data() is called per few characters

    # --- the XML parser's target interface -------------------------------------------------
    def start(self, tag: str, _attrs: dict[str, str]) -> None:
        self.depth += 1
        self.pieces = None
        self.in_text = False
        if self.depth > KEPT_DEPTH:
            if self.depth > MAX_DEPTH:
                raise _TooDeep(f"elements nested over {MAX_DEPTH} deep")
            return  # no element below this depth is read
        self.path.append(_local(tag))
        where = tuple(self.path)  # at most KEPT_DEPTH names: O(1)
        if where == REDIRECT:
            self.redirect = True
        elif where == TEXT:
            self.text = []
            self.in_text = True
        elif where in FIELDS:
            self.pieces = []
            self.pieces_chars = 0

    def data(self, chunk: str) -> None:
        if self.in_text:
            if self.text is None:
                return
            self.text_chars += len(chunk)
            if self.text_chars > self.most:
                self.too_large = True  # stop: the caller feeds this page no more
                self.text = None
            else:
                self.text.append(chunk)
        elif self.pieces is not None and self.pieces_chars < FIELD_CHARS:
            self.pieces.append(chunk)
            self.pieces_chars += len(chunk)

    def end(self, _tag: str) -> None:
        self.depth -= 1
        self.in_text = False
        if self.depth >= KEPT_DEPTH:
            self.pieces = None
            return  # an element below the kept names closed
        name = FIELDS.get(tuple(self.path))
        if name is not None and self.pieces is not None:
            self.fields[name] = "".join(self.pieces)[:FIELD_CHARS]
        self.pieces = None
        self.path.pop()

    def close(self) -> _Page:
        return self


class _PageReader:
    """One page's own XML parser, fed the page's bytes as they come."""

    def __init__(self, most: int) -> None:
        self.page = _Page(most)
        self.parser = ET.XMLParser(target=self.page)
        self.most_bytes = XML_BYTES_PER_TEXT_BYTE * most + READ_SIZE
        self.fed = 0
        self.error: str | None = None

    @property
    def stopped(self) -> bool:
        return self.error is not None or self.page.too_large

    def feed(self, data: bytes) -> None:
        if self.stopped or not data:
            return
        self.fed += len(data)
        if self.fed > self.most_bytes:
            self.page.too_large = True
            return
        try:
            self.parser.feed(data)
        except ET.ParseError as exc:
            self.error = f"not well-formed XML: {exc}"
        except _TooDeep as exc:  # the rest of the page is read past, never parsed
            self.error = str(exc)

    def finish(self) -> _Page:
        """The page read; ArticleSkipped when it was too large or malformed."""
        if not self.stopped:
            try:
                self.parser.close()
            except ET.ParseError as exc:
                self.error = f"not well-formed XML: {exc}"
        if self.page.too_large:
            raise ArticleSkipped("too_large", f"over {self.page.most} bytes of text")
        if self.error is not None:
            raise ArticleSkipped("malformed_page", self.error)
        return self.page


class DumpSource(FileSource):
    """Articles of a pages-articles XML dump, in file order, from :attr:`start` on; each
    carries the position just past its page."""

    kind = "dump"

    def __iter__(self) -> Iterator[Article]:
        pages = self.start.count
        try:
            with DecompressedReader(self.path, self.start) as reader:
                offset = self.start.offset  # where ``held`` starts, in decompressed bytes
                held = b""  # read, not yet fed: it may end inside a "<page>" or "</page>"
                page: _PageReader | None = None  # the page being read
                while chunk := reader.read(READ_SIZE):
                    held += chunk
                    while True:
                        if page is None:
                            begin = held.find(PAGE_START)
                            if begin < 0:  # between pages: nothing to keep
                                cut = max(0, len(held) - len(PAGE_START) + 1)
                                offset, held = offset + cut, held[cut:]
                                break
                            offset, held = offset + begin, held[begin:]
                            page = _PageReader(self.max_article_bytes)
                        end = held.find(PAGE_END)
                        if end < 0:
                            cut = max(0, len(held) - len(PAGE_END) + 1)
                            page.feed(held[:cut])
                            offset, held = offset + cut, held[cut:]
                            break
                        end += len(PAGE_END)
                        page.feed(held[:end])
                        offset, held = offset + end, held[end:]
                        pages += 1
                        article = self._read(page, pages)
                        page = None
                        if article is not None:
                            at, member_offset = reader.restart_point(offset)
                            yield replace(article, after=Position(offset, pages, at, member_offset))
                if page is not None:
                    raise SourceError(
                        f"malformed XML in {self.path} after {pages} pages: "
                        "the file ends inside a page"
                    )
        except (OSError, EOFError) as exc:
            raise SourceError(f"cannot read {self.path} after {pages} pages: {exc}") from exc

    def _read(self, reader: _PageReader, number: int) -> Article | None:
        """The page's article, or None with the reason counted (nothing in it raises)."""
        where = f"{self.name} page {number}"
        try:
            return self._article(reader.finish())
        except ArticleSkipped as skipped:
            self.skipped.skip(skipped.reason, where, skipped.detail)
        except Exception as exc:  # any other failure is this page's, not the dump's
            self.skipped.skip("unparsable", where, f"{type(exc).__name__}: {exc}")
        return None

    def _article(self, page: _Page) -> Article | None:
        title = page.fields.get("title")
        page_id = page.fields.get("id")
        if not title or not page_id:
            self.skipped.skip("missing_fields")
            return None
        if (page.fields.get("ns") or "0").strip() != "0":
            self.skipped.skip("namespace")
            return None
        if page.redirect:
            self.skipped.skip("redirect")
            return None
        if page.text is None:
            self.skipped.skip("no_revisions")
            return None
        wikitext = "".join(page.text)
        if too_large(wikitext, self.max_article_bytes):
            raise ArticleSkipped("too_large", f"over {self.max_article_bytes} bytes")
        reason = skip_reason(title, wikitext)
        if reason is not None:
            self.skipped.skip(reason)
            return None
        page_id, title = self.skipped.capped(page_id.strip(), title, self.name)
        text = (self.clean or clean_or_skip)(wikitext)
        if not text:
            self.skipped.skip("empty")
            return None
        return Article(id=page_id, title=title, text=text, source=self.name)
