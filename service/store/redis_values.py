"""How the store's readers and writers take Redis values: text whether the client decodes or
not, and numbers that must be finite before they are published."""

from __future__ import annotations

import math


def text(value: bytes | str) -> str:
    """``value`` as text, from a client with or without ``decode_responses``."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


def finite(value: float, what: str) -> float:
    """``value`` as a float, refused when it is NaN or infinite (``what`` names it)."""
    if not math.isfinite(value):
        raise ValueError(f"{what} must be finite, got {value!r}: never publish NaN")
    return float(value)


def raw_bytes(value: object) -> bytes:
    """``value``, which must be bytes: the model's binary fields need a client without
    ``decode_responses``."""
    if not isinstance(value, bytes):
        raise TypeError(
            "read_model needs a client without decode_responses "
            "(see service.store.redis_client.connect)"
        )
    return value
