"""The hot reads' parameters parsed strictly, as the schema says, by both ways of answering.

The pre-rendered path (:mod:`service.api.reads.prerendered`) and the routes (through
:func:`strict`) read the same text with the same rules, so a query gets the same answer from
either: an integer is ASCII digits only (leading zeros allowed; at most :data:`MAX_DIGITS`
significant ones, so ``int()`` never meets a number too long to convert), a boolean is ``true``
or ``false``, a choice one of its values, and each parameter is given at most once. Anything
else is an :class:`InvalidParameter` that names the parameter and shows at most
:data:`SHOWN_CHARS` characters of the value, which the app answers with a 422.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from fastapi import Request
from fastapi.exceptions import RequestValidationError

MAX_DIGITS = 18  # below 2**63: every accepted integer is a plain machine integer
MAX_INTEGER = 10**MAX_DIGITS - 1  # the schema's maximum of an integer with no other bound
SHOWN_CHARS = 32  # of a value quoted back in an error message


def shown(value: str) -> str:
    """``value`` quoted for a message, cut to :data:`SHOWN_CHARS` characters."""
    if len(value) <= SHOWN_CHARS:
        return repr(value)
    return repr(value[:SHOWN_CHARS]) + f"... ({len(value)} characters)"


class InvalidParameter(ValueError):
    """A parameter the schema does not allow: where it is (query or path), its name, and why."""

    def __init__(self, where: str, name: str, message: str, kind: str) -> None:
        super().__init__(f"{where} parameter {name}: {message}")
        self.where, self.name, self.message, self.kind = where, name, message, kind

    def as_validation_error(self) -> RequestValidationError:
        """The same complaint as FastAPI's own 422s, so the app's handler answers it."""
        return RequestValidationError(
            [{"loc": (self.where, self.name), "msg": self.message, "type": self.kind}]
        )


@dataclass(frozen=True)
class Integer:
    """A whole number from ``low`` to ``high``."""

    low: int = 0
    high: int = MAX_INTEGER

    def parse(self, where: str, name: str, text: str) -> int:
        if not text or not (text.isascii() and text.isdigit()):
            raise InvalidParameter(
                where, name, f"{shown(text)} is not a whole number in digits", "int_parsing"
            )
        digits = text.lstrip("0") or "0"
        if len(digits) > MAX_DIGITS:
            raise InvalidParameter(
                where, name, f"{len(digits)} digits: above the most, {self.high}", "less_than_equal"
            )
        value = int(digits)
        if value < self.low:
            raise InvalidParameter(
                where, name, f"{value} is below the least, {self.low}", "greater_than_equal"
            )
        if value > self.high:
            raise InvalidParameter(
                where, name, f"{value} is above the most, {self.high}", "less_than_equal"
            )
        return value


@dataclass(frozen=True)
class Choice:
    """One of ``values``, spelled exactly."""

    values: tuple[str, ...]

    def parse(self, where: str, name: str, text: str) -> str:
        if text not in self.values:
            allowed = ", ".join(self.values)
            raise InvalidParameter(where, name, f"{shown(text)} is not one of {allowed}", "enum")
        return text


@dataclass(frozen=True)
class Boolean:
    """``true`` or ``false``, the schema's boolean."""

    def parse(self, where: str, name: str, text: str) -> bool:
        if text not in ("true", "false"):
            raise InvalidParameter(
                where, name, f"{shown(text)} is not true or false", "bool_parsing"
            )
        return text == "true"


_DECIMAL = re.compile(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


@dataclass(frozen=True)
class Fraction:
    """A number from 0 to 1 in decimal (an exponent allowed, as JSON numbers have one)."""

    def parse(self, where: str, name: str, text: str) -> float:
        if not text.isascii() or _DECIMAL.fullmatch(text) is None:
            raise InvalidParameter(where, name, f"{shown(text)} is not a number", "float_parsing")
        value = float(text)
        if not 0.0 <= value <= 1.0:
            raise InvalidParameter(
                where, name, f"{shown(text)} is not between 0 and 1", "less_than_equal"
            )
        return value


Kind = Integer | Choice | Boolean | Fraction


def parse_query(raw: bytes | str, spec: Mapping[str, Kind]) -> dict[str, Any]:
    """The parameters of ``spec`` found in the raw query string, parsed; names outside ``spec``
    are left alone (the schema does not forbid them). Raises :class:`InvalidParameter`."""
    text = raw.decode("latin-1") if isinstance(raw, bytes) else raw
    given: dict[str, list[str]] = {}
    for name, value in parse_qsl(text, keep_blank_values=True):
        if name in spec:
            given.setdefault(name, []).append(value)
    values: dict[str, Any] = {}
    for name, texts in given.items():
        if len(texts) > 1:
            raise InvalidParameter("query", name, "given more than once", "multiple_values")
        values[name] = spec[name].parse("query", name, texts[0])
    return values


def strict(
    query: Mapping[str, Kind], path: Mapping[str, Kind] | None = None
) -> Callable[[Request], None]:
    """A route dependency that refuses what :func:`parse_query` refuses, before FastAPI's own
    (laxer) conversion of the same parameters runs."""

    def check(request: Request) -> None:
        try:
            for name, kind in (path or {}).items():
                kind.parse("path", name, str(request.path_params[name]))
            parse_query(request.scope.get("query_string", b""), query)
        except InvalidParameter as invalid:
            raise invalid.as_validation_error() from None

    return check


ESTIMATE = Choice(("mean", "sample"))
SORT = Choice(("id", "coherence", "size"))
SINCE = {"since": Integer(0)}
TOPIC_ID = {"topic_id": Integer(0)}
# The path's topic number, as the schema describes it (docs/api.md, "Topic numbers").
TOPIC_NUMBER = "Topic number: 0 to K-1 while K is fixed; while topics move, as /topics lists"


def topics_query(most: int, one: bool) -> dict[str, Kind]:
    """The query of ``/topics`` (``one``: of ``/topics/{id}``), ``top`` bounded by ``most``."""
    spec: dict[str, Kind] = {
        "top": Integer(1, most),
        "estimate": ESTIMATE,
        "uncertainty": Boolean(),
        "relevance": Fraction(),
    }
    return spec if one else {**spec, "sort": SORT}
