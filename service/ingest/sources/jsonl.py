"""JSON-lines articles (``.gz`` allowed): one {"title", "text"[, "format", "id"]} per line.

``format: "wikitext"`` records are cleaned with
:func:`service.ingest.cleaning.clean_wikitext`; plain records are taken as they are. Malformed
lines, records without text, redirects, disambiguation pages and empty texts are skipped and
counted by reason.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from service.ingest.cleaning import clean_wikitext, skip_reason
from service.ingest.sources.base import Article, SkipCounter, SourceError, require_file


class JsonlSource:
    """Articles from a JSON-lines file, read line by line (never whole into memory)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"jsonl:{self.path}"
        self.skipped = SkipCounter()
        require_file(self.path)

    def _open(self) -> IO[str]:
        if self.path.suffix == ".gz":
            return gzip.open(self.path, "rt", encoding="utf-8")
        return self.path.open(encoding="utf-8")

    def __iter__(self) -> Iterator[Article]:
        number = 0
        try:
            with self._open() as lines:
                for number, line in enumerate(lines, 1):
                    article = self._parse(line, number)
                    if article is not None:
                        yield article
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
