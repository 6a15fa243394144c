"""The shared corpora (``../shared/corpora`` beside the repository), read in place, never copied.

``STREAMLDA_SHARED`` overrides where ``shared/`` is. The raw dump is parsed here with the
standard library only, independently of :mod:`service.ingest.sources.dump`, so tests can use it
as an oracle.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("STREAMLDA_SHARED", REPO.parent / "shared")).resolve()
CORPORA = SHARED / "corpora"
DUMP = CORPORA / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
SHARDS = tuple(CORPORA / f"dev-{i:02d}.jsonl.gz" for i in range(6))


def require_corpora() -> None:
    """Fail with a clear message when the shared corpora are not where they should be."""
    if not DUMP.is_file() or not SHARDS[0].is_file():
        raise FileNotFoundError(
            f"shared corpora not found in {CORPORA} (set STREAMLDA_SHARED to the shared/ folder)"
        )


@dataclass(frozen=True)
class RawPage:
    """One page as stored in a dump or served by the MediaWiki API (raw wikitext)."""

    pageid: int
    ns: int
    title: str
    wikitext: str
    redirect: bool = False


def read_jsonl(path: Path, limit: int | None = None) -> Iterator[dict[str, str]]:
    """Records of a (gzipped) JSON-lines shard, in file order."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if limit is not None and number >= limit:
                return
            yield json.loads(line)


@functools.cache
def dump_pages() -> tuple[RawPage, ...]:
    """Every ``<page>`` of the raw dump sample, redirects and other namespaces included."""
    require_corpora()
    pages = []
    with bz2.open(DUMP, "rb") as stream:
        for _, element in ET.iterparse(stream):
            if not element.tag.endswith("}page"):
                continue
            values = {child.tag.rsplit("}", 1)[-1]: child for child in element}
            revision = values["revision"]
            text = next(c.text or "" for c in revision if c.tag.endswith("}text"))
            pages.append(
                RawPage(
                    pageid=int(values["id"].text or 0),
                    ns=int(values["ns"].text or 0),
                    title=values["title"].text or "",
                    wikitext=text,
                    redirect="redirect" in values,
                )
            )
            element.clear()
    return tuple(pages)


@functools.cache
def wikitext_records() -> tuple[dict[str, str], ...]:
    """The 98 raw-wikitext articles of the JSON-lines shards (the dump's usable articles)."""
    require_corpora()
    return tuple(
        record
        for shard in SHARDS
        for record in read_jsonl(shard)
        if record.get("format") == "wikitext"
    )


@functools.cache
def plain_records(count: int) -> tuple[dict[str, str], ...]:
    """The first ``count`` plain-text articles of shard 0."""
    require_corpora()
    records = []
    for record in read_jsonl(SHARDS[0]):
        if record.get("format") == "plain":
            records.append(record)
            if len(records) == count:
                break
    return tuple(records)
