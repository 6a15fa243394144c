"""How much resident memory an operation adds to this process at its peak (Linux /proc).

Writing 5 to /proc/self/clear_refs resets the peak (VmHWM) to the current resident set, so the
peak read after the operation is its own, less what it found freed and reused.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")
_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _kib(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise LookupError(field)


def peak_growth(operation: Callable[[], T]) -> tuple[T, int]:
    """(what ``operation`` returned, bytes its peak resident set rose above the start);
    skips the test where the kernel cannot reset the peak."""
    try:
        _CLEAR_REFS.write_text("5")
    except OSError as exc:
        pytest.skip(f"cannot reset the peak resident set here: {exc}")
    before = _kib("VmRSS")
    result = operation()
    return result, (_kib("VmHWM") - before) * 1024
