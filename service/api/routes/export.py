"""``GET /admin/export``: the served model's export files as one .tar.gz, streamed.

The files are :mod:`service.store.export`'s, the same bytes ``streamlda export`` writes; behind
the admin token like the other admin routes (routes/admin.py), since the archive is large to
make and holds the whole model. One export is built at a time per API process: the app's
ConcurrencyLimitMiddleware answers another with 503 and Retry-After, before it starts.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, status
from fastapi.responses import StreamingResponse

from service.api.deps import ModelCacheDep, RedisDep
from service.api.routes.admin import require_admin
from service.store.export import Export, ExportError, tar_gz
from service.store.topic_seeds import read_topic_seeds

MEDIA_TYPE = "application/gzip"
PATH = "/admin/export"
# Another export while one is built is refused, told to come back after this many seconds.
RETRY_AFTER_S = 5


class TarGzResponse(StreamingResponse):
    """A streamed .tar.gz."""

    media_type = MEDIA_TYPE


def _error(description: str) -> dict[str, Any]:
    """An error answer in the schema: ErrorOut as JSON (``model`` would file it under the
    route's own media type, the archive's)."""
    schema = {"$ref": "#/components/schemas/ErrorOut"}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


router = APIRouter(
    prefix="/admin",
    tags=["admin"],
    dependencies=[Depends(require_admin)],
    responses={
        401: _error("Missing or wrong bearer token"),
        404: _error("Admin endpoints are off (no admin_token)"),
        503: _error(
            "Redis is unreachable, no model yet, the model has no stream figures (a worker "
            "that predates them) or no documents in its sample, or another export is being "
            "built (then with Retry-After)"
        ),
    },
)


@router.get(
    PATH.removeprefix("/admin"),
    response_class=TarGzResponse,
    responses={
        200: {
            "content": {MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}},
            "description": "A .tar.gz of the files docs/export.md describes, in one folder",
        }
    },
)
def export(client: RedisDep, cache: ModelCacheDep) -> TarGzResponse:
    """The served model for pyLDAvis, numpy and spreadsheets (beta, vocabulary, term
    frequencies, topic sizes, the document sample), as a .tar.gz streamed as it is made."""
    loaded = cache.get(client)
    if loaded is None:
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            "no model yet: the worker has not published its first model",
        )
    try:
        made = Export.of(loaded.model, read_topic_seeds(client)[1])
    except ExportError as exc:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, str(exc)) from None
    name = made.archive_name() + ".tar.gz"
    return TarGzResponse(
        tar_gz(made), headers={"Content-Disposition": f'attachment; filename="{name}"'}
    )
