"""A hostile corpus, made by code: real articles from the shared corpora with every damaged or
pathological shape a source must survive among them, as JSON lines and as a small dump.

Each maker returns what a source must make of it: the ids of the good articles, in file order,
and the count of each skip reason.
"""

from __future__ import annotations

import bz2
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

from tests.support.corpora import dump_pages, plain_records, wikitext_records

# The bound the hostile corpus is made for: above its real articles, yet cheap to exceed.
MAX_ARTICLE_BYTES = 400_000
EXPORT_NS = "http://www.mediawiki.org/xml/export-0.10/"

# Wikitext that cleans in linear time only since the cleaning was rewritten (kept as suffixes
# of real articles: the articles must still be learned).
SLOW_SUFFIXES = (
    "\n" + "<ref>" * 16_000,
    "\n=" + " " * 80_000 + "x",
    "\n{{" + " " * 80_000,
    "\nx" + " ()" * 20_000 + " x",
)
# Wikitext the cleaner refuses or fails on: skipped as unparsable.
UNPARSABLE = (
    "{{" * 1_000 + "}}" * 1_000,  # the parser's RecursionError
    "Lead. " + "{{a|" * 5_000 + "}}" * 5_000,  # nested past the parser's depth
    "Lead. " + "{{a|" * 20_000,  # nested and never closed (quadratic in the parser)
)


@dataclass
class Expected:
    """What a source must make of a hostile file."""

    good: list[str] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


def _wikitext_good() -> list[dict[str, str]]:
    return [dict(r) for r in wikitext_records()]


def write_hostile_jsonl(path: Path, good: int) -> Expected:
    """``good`` real articles (plain and wikitext; some with slow suffixes) and, among them,
    one line of each hostile shape. Written with bz2 when ``path`` ends in .bz2."""
    records = _wikitext_good()
    for record, suffix in zip(records, SLOW_SUFFIXES, strict=False):
        record["text"] += suffix
    records += [dict(r) for r in plain_records(good - len(records))]
    records = records[:good]
    bad: list[tuple[bytes, str]] = [
        (b'{"id": "bad-1", "title": "Caf\xe9", "text": "not UTF-8"}', "undecodable"),
        (b"\xff\xfe{}", "undecodable"),
        (b'{"id": "bad-2", "title": "Cut", "text": "cut', "malformed_json"),
        (b"[" * 100_000 + b"]" * 100_000, "malformed_json"),  # RecursionError in json
        (b'{"id": "bad-3", "n": ' + b"9" * 5_000 + b"}", "malformed_json"),  # too many digits
        (b'"just a string"', "missing_text"),
        (_line("bad-4", "Long line", "x " * MAX_ARTICLE_BYTES * 2), "too_large"),
        (_line("bad-5", "Long text", "\u00e9" * (MAX_ARTICLE_BYTES // 2 + 10)), "too_large"),
    ]
    bad += [
        (_line(f"bad-u{i}", f"Unparsable {i}", text, "wikitext"), "unparsable")
        for i, text in enumerate(UNPARSABLE)
    ]
    expected = Expected()
    lines: list[bytes] = []
    step = max(1, len(records) // (len(bad) + 1))
    for i, record in enumerate(records):
        if i and i % step == 0 and bad:
            line, reason = bad.pop(0)
            lines.append(line)
            expected.skipped[reason] += 1
        lines.append(json.dumps(record).encode())
        expected.good.append(record["id"])
    for line, reason in bad:
        lines.append(line)
        expected.skipped[reason] += 1
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(bz2.compress(data) if path.suffix == ".bz2" else data)
    return expected


def _line(page_id: str, title: str, text: str, format: str = "plain") -> bytes:
    return json.dumps({"id": page_id, "title": title, "text": text, "format": format}).encode()


def _page(page_id: str, title: str, text: str, ns: int = 0) -> bytes:
    return (
        f"  <page>\n    <title>{escape(title)}</title>\n    <ns>{ns}</ns>\n    <id>{page_id}</id>\n"
        f'    <revision>\n      <id>1{page_id}</id>\n      <text xml:space="preserve">'
        f"{escape(text)}</text>\n    </revision>\n  </page>\n"
    ).encode()


def write_hostile_dump(path: Path) -> Expected:
    """The real dump sample's main-namespace articles with hostile pages among them (bz2)."""
    pages = [p for p in dump_pages() if p.ns == 0 and not p.redirect]
    usable = {r["id"] for r in wikitext_records()}
    bad: list[tuple[bytes, str]] = [
        (b"  <page>\n    <title>Broken</titl>\n  </page>\n", "malformed_page"),
        (_page("900001", "Not UTF-8", "caf").replace(b"caf", b"caf\xe9"), "malformed_page"),
        (_page("900002", "Huge", "word " * MAX_ARTICLE_BYTES), "too_large"),
        (_page("900003", "Quotes", '"' * (MAX_ARTICLE_BYTES + 1)), "too_large"),
    ]
    bad += [
        (_page(f"90001{i}", f"Unparsable {i}", text), "unparsable")
        for i, text in enumerate(UNPARSABLE)
    ]
    expected = Expected()
    body: list[bytes] = [
        f'<mediawiki xmlns="{EXPORT_NS}" version="0.10" xml:lang="en">\n'.encode(),
        b"  <siteinfo><sitename>Wikipedia</sitename></siteinfo>\n",
    ]
    step = max(1, len(pages) // (len(bad) + 1))
    for i, page in enumerate(pages):
        if i and i % step == 0 and bad:
            data, reason = bad.pop(0)
            body.append(data)
            expected.skipped[reason] += 1
        body.append(_page(str(page.pageid), page.title, page.wikitext))
        if str(page.pageid) in usable:
            expected.good.append(str(page.pageid))
        else:
            expected.skipped["disambiguation"] += 1
    for data, reason in bad:
        body.append(data)
        expected.skipped[reason] += 1
    body.append(b"</mediawiki>\n")
    path.write_bytes(bz2.compress(b"".join(body)))
    return expected
