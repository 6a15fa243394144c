"""``POST /admin/pause|resume|checkpoint``: operator requests the worker reads from Redis.

Off (404) unless the setting admin_token is set; then a request needs
``Authorization: Bearer <admin_token>`` (401 otherwise).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from service.api.deps import AdminTokenDep, RedisDep
from service.api.http.admin_gate import refusal
from service.api.http.query_params import TOPIC_ID, strict
from service.api.schemas import BODY_ERRORS, GONE, INVALID, AdminOut, ErrorOut
from service.store.control import read_control, request_checkpoint, set_paused

# auto_error=False: a missing or non-bearer header comes here as None, so the 404 (admin off)
# and 401 (wrong token) below stay ours.
bearer = HTTPBearer(auto_error=False, description="The setting admin_token")


def require_admin(
    admin_token: AdminTokenDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """404 while admin is off, 401 without the right bearer token (the app's AdminGateMiddleware
    answers the same before the body is read; this declares the scheme and holds without it)."""
    refused = refusal(admin_token, "" if credentials is None else credentials.credentials)
    if refused is not None:
        raise refused


def topic_router(unavailable: str) -> APIRouter:
    """The admin router of a topic's routes (``/admin/topics/{topic_id}/...``): the token, a
    topic id parsed strictly, and the answers they share; ``unavailable``: what their 503
    means."""
    return APIRouter(
        prefix="/admin",
        tags=["admin"],
        dependencies=[Depends(require_admin), Depends(strict({}, TOPIC_ID))],
        responses={
            401: {"model": ErrorOut, "description": "Missing or wrong bearer token"},
            404: {"model": ErrorOut, "description": "Admin endpoints are off, or no such topic"},
            **GONE,
            **BODY_ERRORS,
            **INVALID,
            503: {"model": ErrorOut, "description": unavailable},
        },
    )


router = APIRouter(
    prefix="/admin",
    tags=["admin"],
    dependencies=[Depends(require_admin)],
    responses={
        401: {"model": ErrorOut, "description": "Missing or wrong bearer token"},
        404: {"model": ErrorOut, "description": "Admin endpoints are off (no admin_token)"},
        503: {"model": ErrorOut, "description": "Redis is unreachable"},
    },
)


def _state(client: RedisDep, request: Request) -> AdminOut:
    """The control state now, once the view has seen it (so /stats already shows it)."""
    request.app.state.view.wait_fresh(request.app.state.redis_timeout)
    control = read_control(client)
    return AdminOut(paused=control.paused, checkpoint_seq=control.checkpoint_seq)


@router.post("/pause", response_model=AdminOut)
def pause(client: RedisDep, request: Request) -> AdminOut:
    """The worker stops taking minibatches (it still beats and answers checkpoints)."""
    set_paused(client, True)
    return _state(client, request)


@router.post("/resume", response_model=AdminOut)
def resume(client: RedisDep, request: Request) -> AdminOut:
    """The worker takes minibatches again."""
    set_paused(client, False)
    return _state(client, request)


@router.post("/checkpoint", response_model=AdminOut)
def checkpoint(client: RedisDep, request: Request) -> AdminOut:
    """The worker writes a checkpoint at its next opportunity."""
    request_checkpoint(client)
    return _state(client, request)
