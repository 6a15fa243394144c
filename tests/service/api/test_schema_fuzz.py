"""schemathesis against a real ``streamlda up`` with a learned model: every operation, valid and
invalid inputs (negative data rejection among all its checks), seeded and bounded in time.

tests/service/api/test_openapi.py runs the same checks against the app over a published stand-in;
this one meets what the worker really publishes, and the processes ``up`` really runs.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis import GenerationMode

from tests.service.api.test_openapi import _conforms
from tests.service.learn.helpers import wait_until
from tests.service.test_up import get, start_up, stop_up, two_points
from tests.support.redis_server import free_port

pytestmark = pytest.mark.slow  # starts Redis, a scraper, a worker and the API

TOKEN = "fuzz-admin-token"
EXAMPLES = 80  # per operation, valid and invalid alike
BUDGET_S = 150.0  # for all operations: examples stop being drawn past it


def test_up_answers_as_its_schema_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMLDA_ADMIN_TOKEN", TOKEN)
    port = free_port()
    up = start_up(tmp_path / "data", port, tmp_path / "up.log")
    try:
        wait_until(
            lambda: up.poll() is not None or (get(port, "/topics")[0] == 200 and two_points(port)),
            "a model and two perplexity points",
            timeout=240,
        )
        assert up.poll() is None, (tmp_path / "up.log").read_text()
        schema = schemathesis.openapi.from_url(f"http://127.0.0.1:{port}/openapi.json")
        # An invalid body can also be too large: its documented 413 rejects it just as well.
        rejected = schema.config.checks.negative_data_rejection
        schema.config.checks.negative_data_rejection = type(rejected)(
            expected_statuses=[*rejected.expected_statuses, "413"]
        )
        auth = {"Authorization": f"Bearer {TOKEN}"}
        deadline = time.monotonic() + BUDGET_S
        for result in schema.get_all_operations():
            operation = result.ok()
            if operation.path.startswith("/admin/"):
                continue  # pausing the worker is the stand-in test's to try (test_openapi.py)
            cases = st.one_of([operation.as_strategy(mode) for mode in GenerationMode])
            _conforms(cases, auth, [], EXAMPLES, deadline)
        assert up.poll() is None, "up died under the fuzzing"
        log = (tmp_path / "up.log").read_text()
        assert "Traceback" not in log, log[-4000:]
    finally:
        stop_up(up)
