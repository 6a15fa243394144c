"""The decompressed bytes of a source file (plain, ``.gz`` or ``.bz2``), from any position.

A plain file seeks straight to a position. A compressed one seeks to the start of the member
(gzip member, bzip2 stream) holding it, then decompresses without parsing up to it: instant on
multi-member files (bgzip, ``pigz -i``, Wikipedia's multistream dumps), and on one-member files
still several times faster than reading the lines again. The reader notes where each member
starts, so the position of anything it read says where to restart.
"""

from __future__ import annotations

import bz2
import io
import zlib
from collections import deque
from pathlib import Path
from typing import Protocol

from service.ingest.sources.base import Position

# Compressed bytes read at a time, and the most decompressed bytes made from them in one go
# (a highly compressible file must not balloon in memory).
READ_SIZE = 64 * 1024
OUT_SIZE = 64 * 1024


class _Decompressor(Protocol):
    """One member's decompression: zlib's and bz2's objects behind one face."""

    eof: bool

    def feed(self, data: bytes) -> bytes: ...

    @property
    def needs_input(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...


class _Gzip:
    def __init__(self) -> None:
        self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # one gzip member, header and trailer
        self.eof = False

    def feed(self, data: bytes) -> bytes:
        out = self._d.decompress(self._d.unconsumed_tail + data, OUT_SIZE)
        self.eof = self._d.eof
        return out

    @property
    def needs_input(self) -> bool:
        return not self._d.unconsumed_tail

    @property
    def unused_data(self) -> bytes:
        return self._d.unused_data


class _Bzip2:
    def __init__(self) -> None:
        self._d = bz2.BZ2Decompressor()
        self.eof = False

    def feed(self, data: bytes) -> bytes:
        out = self._d.decompress(data, OUT_SIZE)
        self.eof = self._d.eof
        return out

    @property
    def needs_input(self) -> bool:
        return self._d.needs_input

    @property
    def unused_data(self) -> bytes:
        return self._d.unused_data


def compression(path: Path) -> str:
    """``gz``, ``bz2`` or ``plain``, from the file's suffix (as the sources always did)."""
    suffix = path.suffix
    return suffix[1:] if suffix in (".gz", ".bz2") else "plain"


class DecompressedReader(io.RawIOBase):
    """The decompressed bytes of ``path`` from ``start`` on; :meth:`restart_point` tells where
    a later reader restarts to reach an offset this one has read up to."""

    def __init__(self, path: Path, start: Position | None = None) -> None:
        super().__init__()
        start = start or Position()
        self.path = path
        self.kind = compression(path)
        self._file = path.open("rb")
        self._input = b""  # compressed bytes read and not yet given to a decompressor
        self._pending = b""  # decompressed bytes made, returned up to _pending_at
        self._pending_at = 0
        self._decompressor: _Decompressor | None = None
        # (decompressed start, compressed start) of the members read from, oldest first.
        self._members: deque[tuple[int, int]] = deque()
        if self.kind == "plain":
            self._file.seek(start.offset)
            self._offset = start.offset
        else:
            self._file.seek(start.member_at)
            self._offset = start.member_offset
            self._begin_member(start.member_at)
        self._discard(start.offset - self._offset)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._file.close()
        super().close()

    def restart_point(self, offset: int) -> tuple[int, int]:
        """(compressed offset, decompressed offset) a reader seeks to, to restart at ``offset``
        (an offset at or past the last one asked about, and no further than read)."""
        if self.kind == "plain":
            return offset, offset
        while len(self._members) > 1 and self._members[1][0] <= offset:
            self._members.popleft()  # offsets only grow: older members are never asked again
        decompressed, compressed = self._members[0]
        return compressed, decompressed

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.kind == "plain":
            read = self._file.readinto(buffer)
        else:
            data = self._decompress(len(buffer))
            read = len(data)
            buffer[:read] = data
        self._offset += read
        return read

    def _discard(self, size: int) -> None:
        """Read and drop ``size`` bytes (decompression only: nothing is parsed)."""
        while size > 0:
            data = self.read(min(size, OUT_SIZE))
            if not data:
                return  # past the end: the caller reads nothing more
            size -= len(data)

    def _begin_member(self, compressed_at: int) -> None:
        self._decompressor = _Gzip() if self.kind == "gz" else _Bzip2()
        self._members.append((self._offset, compressed_at))

    def _decompress(self, most: int) -> bytes:
        """Up to ``most`` decompressed bytes, b"" at the end; EOFError on a truncated file."""
        if self._pending_at < len(self._pending):
            data = self._pending[self._pending_at : self._pending_at + most]
            self._pending_at += len(data)
            return data
        while True:
            decompressor = self._decompressor
            assert decompressor is not None
            if decompressor.eof:
                if not self._next_member(decompressor.unused_data):
                    return b""
                continue
            if decompressor.needs_input:
                data = self._input or self._file.read(READ_SIZE)
                self._input = b""
                out = decompressor.feed(data)
                if not data and not out and not decompressor.eof:
                    raise EOFError("compressed file ended before the end-of-stream marker")
            else:
                out = decompressor.feed(b"")
            if out:
                self._pending, self._pending_at = out, min(most, len(out))
                return out[:most]

    def _next_member(self, rest: bytes) -> bool:
        """Start the member after the one just ended; False at the end of the file."""
        if self.kind == "gz":
            rest = rest.lstrip(b"\0")  # gzip allows zero padding after a member
        while not rest:
            rest = self._file.read(READ_SIZE)
            if not rest:
                return False
            if self.kind == "gz":
                rest = rest.lstrip(b"\0")
        self._begin_member(self._file.tell() - len(rest))
        self._input = rest
        return True
