"""Stand-ins for the parser, run in the bounded cleaner's child: one that hangs, one that
allocates without end, one that crashes the process, chosen by a word in the page."""

from __future__ import annotations

import os
import time


def clean(text: str) -> str:
    """The text itself, unless it asks to hang, to allocate or to crash."""
    if "HANG" in text:
        while True:  # busy, as a parser stuck in C code is
            time.monotonic()
    if "ALLOCATE" in text:
        hoard = []
        while True:
            hoard.append(bytearray(64 * 1024 * 1024))
    if "CRASH" in text:
        os.abort()
    return text
