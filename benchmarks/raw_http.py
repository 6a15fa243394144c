"""The load generators' HTTP/1.1 reply reader: a status line, headers and a body of
Content-Length bytes, read from an asyncio stream (no client library's cost in the figures)."""

from __future__ import annotations

import asyncio


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    """(status, lower-cased header fields) of the next reply; its body is read and dropped."""
    status = int((await reader.readline()).split()[1])
    fields: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        fields[name.strip().lower()] = value.strip()
    await reader.readexactly(int(fields.get("content-length", "0")))
    return status, fields
