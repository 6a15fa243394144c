"""JSON-lines articles (``.gz`` allowed): one {"title", "text"[, "format", "id"]} per line.

``format: "wikitext"`` records are cleaned with
:func:`service.ingest.cleaning.clean_wikitext`; plain records are taken as they are. A line is
read up to a limit (twice ``max_article_bytes``: JSON's escapes can double a text) and a longer
one is skipped as ``too_large`` with the rest of it read past, never held. Lines that are not
UTF-8 (``undecodable``) or not JSON (``malformed_json``, however deep their nesting), records
without text, texts over ``max_article_bytes`` (``too_large``), wikitext the cleaner cannot
handle (``unparsable``), redirects, disambiguation pages, empty texts and ids over
``ARTICLE_ID_CHARS`` (``id_too_long``) are skipped and counted by reason; none of them stops the
file. A title over ``TITLE_CHARS`` is cut (see :meth:`~.base.SkipCounter.capped`).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import replace

from service.ingest.cleaning import clean_or_skip, skip_reason
from service.ingest.sources.base import (
    Article,
    ArticleSkipped,
    FileSource,
    Position,
    SourceError,
    encoded_bound,
    too_large,
)
from service.ingest.sources.files import OUT_SIZE, DecompressedReader


class JsonlSource(FileSource):
    """Articles from a JSON-lines file, read line by line (never whole into memory), from
    :attr:`start` on; each carries the position just past its line."""

    kind = "jsonl"

    def __iter__(self) -> Iterator[Article]:
        offset, number = self.start.offset, self.start.count
        most = encoded_bound(self.max_article_bytes)
        try:
            with (
                DecompressedReader(self.path, self.start) as raw,
                io.BufferedReader(raw, OUT_SIZE) as lines,
            ):
                while line := lines.readline(most):
                    number += 1
                    offset += len(line)
                    if len(line) == most and not line.endswith(b"\n"):
                        offset += _read_past_line(lines, most)
                        self.skipped.skip("too_large", self._where(number), f"over {most} bytes")
                        continue
                    article = self._read(line, number)
                    if article is not None:
                        at, member_offset = raw.restart_point(offset)
                        after = Position(offset, number, at, member_offset)
                        yield replace(article, after=after)
        except (OSError, EOFError) as exc:
            raise SourceError(f"cannot read {self.path} after line {number}: {exc}") from exc

    def _where(self, number: int) -> str:
        return f"{self.name} line {number}"

    def _read(self, line: bytes, number: int) -> Article | None:
        """The line's article, or None with the reason counted (nothing in it raises)."""
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.skipped.skip("undecodable", self._where(number), str(exc))
            return None
        try:
            return self._parse(text, number)
        except ArticleSkipped as skipped:
            self.skipped.skip(skipped.reason, self._where(number), skipped.detail)
        except Exception as exc:  # any other failure is this line's, not the file's
            self.skipped.skip("unparsable", self._where(number), f"{type(exc).__name__}: {exc}")
        return None

    def _parse(self, line: str, number: int) -> Article | None:
        if not line.strip():
            return None
        try:
            record = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
            self.skipped.skip("malformed_json", self._where(number), str(exc)[:200])
            return None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            self.skipped.skip("missing_text")
            return None
        title = str(record.get("title") or "")
        text = record["text"]
        if too_large(text, self.max_article_bytes):
            raise ArticleSkipped("too_large", f"over {self.max_article_bytes} bytes")
        reason = skip_reason(title, text)
        if reason is not None:
            self.skipped.skip(reason)
            return None
        article_id, title = self.skipped.capped(
            str(record.get("id") or f"{self.path.name}:{number}"), title, self._where(number)
        )
        if record.get("format") == "wikitext":
            text = (self.clean or clean_or_skip)(text)
        if not text.strip():
            self.skipped.skip("empty")
            return None
        return Article(id=article_id, title=title, text=text, source=self.name)


def _read_past_line(lines: io.BufferedReader[DecompressedReader], most: int) -> int:
    """Read the rest of an overlong line, ``most`` bytes at a time; the bytes read."""
    read = 0
    while part := lines.readline(most):
        read += len(part)
        if part.endswith(b"\n"):
            break
    return read
