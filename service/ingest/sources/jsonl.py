"""JSON-lines articles (``.gz`` allowed): one {"title", "text"[, "format", "id"]} per line.

``format: "wikitext"`` records are cleaned with
:func:`service.ingest.cleaning.clean_wikitext`; plain records are taken as they are. Malformed
lines, records without text, redirects, disambiguation pages and empty texts are skipped and
counted by reason.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import replace

from service.ingest.cleaning import clean_wikitext, skip_reason
from service.ingest.sources.base import Article, FileSource, Position, SourceError
from service.ingest.sources.files import OUT_SIZE, DecompressedReader


class JsonlSource(FileSource):
    """Articles from a JSON-lines file, read line by line (never whole into memory), from
    :attr:`start` on; each carries the position just past its line."""

    kind = "jsonl"

    def __iter__(self) -> Iterator[Article]:
        offset, number = self.start.offset, self.start.count
        try:
            with (
                DecompressedReader(self.path, self.start) as raw,
                io.BufferedReader(raw, OUT_SIZE) as lines,
            ):
                for line in lines:
                    text = line.decode("utf-8")
                    number += 1
                    offset += len(line)
                    article = self._parse(text, number)
                    if article is not None:
                        at, member_offset = raw.restart_point(offset)
                        after = Position(offset, number, at, member_offset)
                        yield replace(article, after=after)
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise SourceError(f"cannot read {self.path} after line {number}: {exc}") from exc

    def _parse(self, line: str, number: int) -> Article | None:
        if not line.strip():
            return None
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            self.skipped.skip("malformed_json")
            return None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            self.skipped.skip("missing_text")
            return None
        title = str(record.get("title") or "")
        text = record["text"]
        reason = skip_reason(title, text)
        if reason is not None:
            self.skipped.skip(reason)
            return None
        if record.get("format") == "wikitext":
            text = clean_wikitext(text)
        if not text.strip():
            self.skipped.skip("empty")
            return None
        article_id = str(record.get("id") or f"{self.path.name}:{number}")
        return Article(id=article_id, title=title, text=text, source=self.name)
