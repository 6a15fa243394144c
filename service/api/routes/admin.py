"""``POST /admin/pause|resume|checkpoint``: operator requests the worker reads from Redis.

Off (404) unless the setting admin_token is set; then a request needs
``Authorization: Bearer <admin_token>`` (401 otherwise).
"""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import APIRouter, Depends, Header, HTTPException, status

from service.api.deps import RedisDep, SettingsDep
from service.api.schemas import AdminOut, ErrorOut
from service.snapshot import read_control, request_checkpoint, set_paused


def require_admin(
    settings: SettingsDep,
    authorization: Annotated[str | None, Header(description="Bearer <admin_token>")] = None,
) -> None:
    """404 while admin is off, 401 without the right bearer token."""
    if not settings.admin_token:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            "admin endpoints are off: set STREAMLDA_ADMIN_TOKEN to enable them",
        )
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not secrets.compare_digest(
        token.strip().encode(), settings.admin_token.encode()
    ):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "admin endpoints need the header 'Authorization: Bearer <admin token>'",
            headers={"WWW-Authenticate": "Bearer"},
        )


router = APIRouter(
    prefix="/admin",
    tags=["admin"],
    dependencies=[Depends(require_admin)],
    responses={401: {"model": ErrorOut}, 404: {"model": ErrorOut}},
)


def _state(client: RedisDep) -> AdminOut:
    control = read_control(client)
    return AdminOut(paused=control.paused, checkpoint_seq=control.checkpoint_seq)


@router.post("/pause", response_model=AdminOut)
def pause(client: RedisDep) -> AdminOut:
    """The worker stops taking minibatches (it still beats and answers checkpoints)."""
    set_paused(client, True)
    return _state(client)


@router.post("/resume", response_model=AdminOut)
def resume(client: RedisDep) -> AdminOut:
    """The worker takes minibatches again."""
    set_paused(client, False)
    return _state(client)


@router.post("/checkpoint", response_model=AdminOut)
def checkpoint(client: RedisDep) -> AdminOut:
    """The worker writes a checkpoint at its next opportunity."""
    request_checkpoint(client)
    return _state(client)
