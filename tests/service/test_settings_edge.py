"""The API reads Settings at one edge: ``create_app(settings)`` and the ``api`` command. Every
other module of service/api is given only the values it needs (so it can be built and tested
from them, and a setting's use is found where the app is wired)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

API = Path(__file__).resolve().parents[2] / "service" / "api"
EDGE = {"app.py", "command.py"}


def imports_settings(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module == "service.settings":
            return True
        if isinstance(node, ast.Import) and any(a.name == "service.settings" for a in node.names):
            return True
    return False


def test_only_the_edge_reads_settings() -> None:
    readers = {str(p.relative_to(API)) for p in API.rglob("*.py") if imports_settings(p)}
    assert readers <= EDGE, f"modules reading Settings beyond the edge: {readers - EDGE}"
    assert readers == EDGE  # the test still sees the edge


def test_an_infer_batch_is_split_over_the_cores_unless_set(monkeypatch) -> None:
    from service.settings import Settings

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert Settings(infer_concurrency=1).api.inference_threads == 4
    assert Settings(infer_concurrency=2).api.inference_threads == 2  # the threads fit the cores
    assert Settings(infer_concurrency=8).api.inference_threads == 1
    assert Settings(infer_threads=3).api.inference_threads == 3


def test_a_part_takes_its_settings_and_the_fields_given_that_are_not_settings() -> None:
    import pytest

    from service.learn.worker import WorkerConfig
    from service.settings import Settings

    settings = Settings(read_block_ms=250, heldout=7)
    config = settings.part(WorkerConfig, consumer="worker-1-rank-2")
    assert (config.consumer, config.read_block_ms, config.heldout) == ("worker-1-rank-2", 250, 7)
    with pytest.raises(TypeError, match="no field"):
        settings.part(WorkerConfig, consumer="w", colour="blue")
