"""File sources started at a position: the rest of the file, exactly, however it is compressed."""

from __future__ import annotations

import bz2
import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from service.ingest.sources import Article, FileSource, SourceError, open_source
from service.ingest.sources.dump import DumpSource
from service.ingest.sources.files import DecompressedReader
from tests.support.corpora import DUMP

LINES = 3000


def _lines() -> bytes:
    """JSON lines of varied length, with bad and skipped lines among them and no id on some."""
    out = []
    for i in range(1, LINES + 1):
        if i % 97 == 0:
            out.append("{broken")
        elif i % 89 == 0:
            out.append(json.dumps({"id": str(i), "title": "R", "text": "#REDIRECT [[X]]"}))
        else:
            record = {"title": f"T{i}", "text": f"Article {i} " + "word " * (i % 50)}
            if i % 7:
                record["id"] = str(i)
            out.append(json.dumps(record))
    return ("\n".join(out) + "\n").encode()


def _members(data: bytes, size: int, compress: Callable[[bytes], bytes]) -> bytes:
    """``data`` as consecutive compressed members (bgzip, pigz -i, multistream bzip2)."""
    return b"".join(compress(data[i : i + size]) for i in range(0, len(data), size))


WRITERS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "plain": ("jsonl", lambda data: data),
    "gzip": ("jsonl.gz", gzip.compress),
    "gzip members": ("jsonl.gz", lambda data: _members(data, 20_000, gzip.compress)),
    "bzip2 streams": ("jsonl.bz2", lambda data: _members(data, 30_000, bz2.compress)),
}


def _resumed(source: FileSource, after: Article) -> list[Article]:
    assert after.after is not None
    source.resume_from(after.after)
    return list(source)


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_a_jsonl_source_started_at_an_article_gives_exactly_the_rest(
    tmp_path: Path, kind: str
) -> None:
    suffix, write = WRITERS[kind]
    path = tmp_path / f"articles.{suffix}"
    path.write_bytes(write(_lines()))
    full = list(open_source(f"jsonl:{path}"))
    assert len(full) > 2500 and full[6].id == f"{path.name}:7"  # line-number ids
    for k in (0, 1, 700, 1500, len(full) - 2, len(full) - 1):
        source = open_source(f"jsonl:{path}")
        assert isinstance(source, FileSource)
        rest = _resumed(source, full[k])
        assert rest == full[k + 1 :], k
        assert [a.id for a in rest] == [a.id for a in full[k + 1 :]]  # ids by line number too
        assert [a.after for a in rest] == [a.after for a in full[k + 1 :]]


def test_a_restart_point_is_the_member_holding_the_position(tmp_path: Path) -> None:
    path = tmp_path / "articles.jsonl.gz"
    path.write_bytes(_members(_lines(), 20_000, gzip.compress))
    last = list(open_source(f"jsonl:{path}"))[-1].after
    assert last is not None and 0 < last.member_at < path.stat().st_size
    assert last.offset - last.member_offset < 20_000  # only the member's start is decompressed
    one = tmp_path / "one.jsonl.gz"
    one.write_bytes(gzip.compress(_lines()))
    last = list(open_source(f"jsonl:{one}"))[-1].after
    assert last is not None and (last.member_at, last.member_offset) == (0, 0)


def _multistream(dump: bytes, pages_per_stream: int) -> bytes:
    """The dump as Wikipedia's multistream files hold it: the header, then streams of pages."""
    pieces = dump.split(b"</page>")
    first = pieces[0].index(b"<page>")
    pages = [piece + b"</page>" for piece in [pieces[0][first:], *pieces[1:-1]]]
    streams = [pieces[0][:first]]
    streams += [
        b"".join(pages[i : i + pages_per_stream]) for i in range(0, len(pages), pages_per_stream)
    ]
    streams[-1] += pieces[-1]
    assert b"".join(streams) == dump
    return b"".join(bz2.compress(stream) for stream in streams)


@pytest.mark.slow
def test_a_dump_started_at_an_article_gives_exactly_the_rest(tmp_path: Path) -> None:
    xml = bz2.decompress(DUMP.read_bytes())
    multistream = tmp_path / "multistream.xml.bz2"  # restarts seek to the stream needed
    multistream.write_bytes(_multistream(xml, 20))
    plain = tmp_path / "plain.xml"
    plain.write_bytes(xml)
    for path, starts in ((DUMP, (60,)), (multistream, (0, 97)), (plain, (60,))):
        full = list(DumpSource(path))
        assert len(full) == 98
        if path == multistream:  # each position names the stream that holds it
            assert len({a.after.member_at for a in full if a.after is not None}) > 5
        for k in starts:
            source = DumpSource(path)
            source.resume_from(full[k].after)  # type: ignore[arg-type]
            assert list(source) == full[k + 1 :], (path.name, k)
    streams = {a.after.member_at for a in full if a.after is not None}  # the plain file's
    assert streams == {a.after.offset for a in full if a.after is not None}  # seek to the offset


def test_a_truncated_compressed_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "articles.jsonl.bz2"
    path.write_bytes(bz2.compress(_lines())[:-100])
    with pytest.raises(SourceError, match="cannot read"):
        list(open_source(f"jsonl:{path}"))
    with DecompressedReader(path) as reader, pytest.raises(EOFError):
        reader.read()


def test_a_file_changed_in_any_way_has_another_identity(tmp_path: Path) -> None:
    path = tmp_path / "articles.jsonl"
    path.write_bytes(_lines())
    source = open_source(f"jsonl:{path}")
    assert isinstance(source, FileSource)
    first = source.identity()
    assert first.startswith("jsonl:") and str(path.resolve()) in first
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert source.identity() != first  # touched
    path.write_bytes(_lines() + b"\n")
    assert source.identity() != first  # grown
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    assert open_source(f"jsonl:{copy}").identity() != source.identity()  # type: ignore[attr-defined]
