"""The OpenAPI schema tells the truth: schemathesis runs all its checks against the real app
(uvicorn, a real Redis holding a published snapshot, perplexity and model) and finds nothing."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
import redis
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as settings_
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import positive_data_acceptance

from service.api.app import create_app
from service.settings import Settings
from tests.service.api.test_export_route import publish_with_stream
from tests.service.conftest import ADMIN_TOKEN, TOPIC_WORDS, Published, serve

pytestmark = pytest.mark.slow

EXAMPLES = 25  # per operation


def test_api_conforms_to_its_schema(
    settings: Settings, published: Published, redis_client: redis.Redis
) -> None:
    """Every operation, valid and invalid inputs, every check; with the admin token so the
    admin endpoints' 200s are exercised too (ignored_auth checks the 401 without it), the
    export's with the stream figures a current worker publishes."""
    publish_with_stream(redis_client, published)
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with serve(create_app(settings)) as base:
        schema = schemathesis.openapi.from_url(base + "openapi.json")
        # An invalid body can also be too large: its documented 413 rejects it just as well.
        rejected = schema.config.checks.negative_data_rejection
        schema.config.checks.negative_data_rejection = type(rejected)(
            expected_statuses=[*rejected.expected_statuses, "413"]
        )
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) == 23  # the seeds, search and topic events routes included
        for operation in operations:
            cases = st.one_of([operation.as_strategy(mode) for mode in GenerationMode])
            # A schema-valid list of seed words can hold no word or too many once tokenised (a
            # word with no letter, one that splits in several): its 422 says which.
            tokenised = operation.label == "PUT /admin/topics/{topic_id}/seeds"
            _conforms(cases, auth, [positive_data_acceptance] if tokenised else [])


def _conforms(
    cases: Any,
    headers: dict[str, str],
    excluded: list[Any],
    examples: int = EXAMPLES,
    until: float = math.inf,
) -> None:
    """Every generated case (``examples`` of them, seeded) answers as the schema says (but for
    the ``excluded`` checks); no case is sent after ``until`` (``time.monotonic()``)."""

    @given(case=cases)
    @settings_(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def conforms(case: schemathesis.Case) -> None:
        if time.monotonic() < until:
            case.call_and_validate(headers=headers, excluded_checks=excluded)

    conforms()


def test_a_body_that_is_not_utf8_conforms(settings: Settings, published: Published) -> None:
    """JSON travels in UTF-8: another encoding gets the documented 400, an ErrorOut."""
    with serve(create_app(settings)) as base:
        schema = schemathesis.openapi.from_url(base + "openapi.json")
        for path in ("/infer", "/infer/batch"):
            operation = schema[path]["POST"]
            case = operation.Case(body="caf\xe9".encode("latin-1"), media_type="application/json")
            response = case.call_and_validate()
            assert response.status_code == 400 and "UTF-8" in response.json()["detail"]


def test_schema_documents_the_real_bodies_and_bounds(api: TestClient) -> None:
    spec = api.get("/openapi.json").json()
    topics = spec["paths"]["/topics"]["get"]
    top = next(p for p in topics["parameters"] if p["name"] == "top")["schema"]
    assert top["minimum"] == 1 and top["maximum"] == TOPIC_WORDS
    invalid = topics["responses"]["422"]["content"]["application/json"]["schema"]["$ref"]
    assert invalid.endswith("/ValidationErrorOut")
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    pause = spec["paths"]["/admin/pause"]["post"]
    assert pause["security"] == [{"HTTPBearer": []}]
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert not any(p["name"].lower() == "authorization" for p in pause.get("parameters", []))
    naming = spec["paths"]["/admin/topics/{topic_id}/name"]
    assert naming["put"]["security"] == naming["delete"]["security"] == [{"HTTPBearer": []}]
    history = spec["paths"]["/topics/{topic_id}/history"]["get"]["responses"]
    assert history["404"]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")
    sort = next(p for p in topics["parameters"] if p["name"] == "sort")["schema"]
    assert "size" in sort["enum"]
    relevance = next(p for p in topics["parameters"] if p["name"] == "relevance")["schema"]
    assert relevance["anyOf"][0] == {"type": "number", "maximum": 1.0, "minimum": 0.0}


def test_top_bound_follows_the_setting(settings: Settings) -> None:
    with TestClient(create_app(settings.updated(topic_words=7))) as api:
        spec = api.get("/openapi.json").json()
        top = spec["paths"]["/topics/{topic_id}"]["get"]["parameters"]
        bound = next(p for p in top if p["name"] == "top")["schema"]
        assert bound["maximum"] == 7 and bound["default"] == 7
        assert api.get("/topics", params={"top": 8}).status_code == 422
