"""Compact JSON bytes, the one writer of the bodies the API builds by hand (reads and errors)."""

from __future__ import annotations

import json
from typing import Any


def dumps(data: Any) -> bytes:
    """Compact JSON bytes (NaN refused: the schema has no place for it)."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).encode("utf-8")
