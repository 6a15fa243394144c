"""Every reason a source skips for is one the API exports at 0 from the start
(service.store.counters.SKIP_REASONS), so the dashboard's scrape-errors panel knows each kind."""

from __future__ import annotations

import ast
from pathlib import Path

from service.store.counters import SKIP_REASONS

INGEST = Path(__file__).resolve().parents[3] / "service" / "ingest"


def reasons_in_code() -> set[str]:
    """String literals passed to ``.skip(...)`` or ``ArticleSkipped(...)``, or returned as a
    reason, by the ingest code."""
    found: set[str] = set()
    for path in INGEST.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and (
                    (isinstance(node.func, ast.Attribute) and node.func.attr == "skip")
                    or (isinstance(node.func, ast.Name) and node.func.id == "ArticleSkipped")
                )
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.add(node.args[0].value)
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant | ast.Tuple):
                value = node.value.elts[0] if isinstance(node.value, ast.Tuple) else node.value
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.add(value.value)
    return found


def test_every_skip_reason_is_exported() -> None:
    found = reasons_in_code()
    assert {"redirect", "malformed_json", "missing_text", "too_large"} <= found  # it sees them
    assert found - {""} <= set(SKIP_REASONS), found - set(SKIP_REASONS)
