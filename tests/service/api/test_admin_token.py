"""The admin token is compared stripped on both sides, in constant time: a token set with a
trailing newline (as a file or a secret store gives it) still matches what a client sends."""

from __future__ import annotations

import pytest

from service.api.http.admin_gate import admin_token_of, refusal
from tests.service.api.test_body_bounds import app_with, bearer, call

SET = "s3cret-token\n"


@pytest.mark.parametrize("presented", ["s3cret-token", " s3cret-token ", "s3cret-token\n"])
def test_a_token_set_with_whitespace_matches_the_same_token(presented: str) -> None:
    assert refusal(SET, presented) is None
    assert refusal("  s3cret-token", presented) is None


def test_another_token_is_still_refused() -> None:
    refused = refusal(SET, "s3cret-token2")
    assert refused is not None and refused.status_code == 401
    refused = refusal(SET, "")
    assert refused is not None and refused.status_code == 401


def test_a_token_of_whitespace_alone_is_no_token() -> None:
    assert admin_token_of(" \n") is None
    refused = refusal(" \n", "")
    assert refused is not None and refused.status_code == 404


def test_the_gate_lets_the_stripped_token_through() -> None:
    app = app_with(admin_token=SET)
    # Past the gate: no route by that name (404), not the gate's 401.
    assert call(app, "POST", "/admin/nothing", headers=[bearer("s3cret-token")]).status == 404
    assert call(app, "POST", "/admin/nothing", headers=[bearer("wrong")]).status == 401
