"""Interactive OpenAPI docs at ``/docs`` that work offline.

FastAPI's default page loads Swagger UI from a CDN. When the ``swagger-ui-py`` package is
installed, its bundled Swagger UI assets are served from ``/docs/assets``; without it, ``/docs``
is a short page linking the schema at ``/openapi.json`` (which always works).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_URL = "/docs/assets"


def swagger_assets() -> Path | None:
    """The directory of Swagger UI's bundled files, if a package ships them."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        return None
    static = Path(next(iter(spec.submodule_search_locations))) / "static"
    return static if (static / "swagger-ui-bundle.js").is_file() else None


def install(app: FastAPI) -> None:
    """Add ``/docs`` (create the app with ``docs_url=None``)."""
    assets = swagger_assets()
    openapi_url = app.openapi_url or "/openapi.json"
    if assets is not None:
        app.mount(ASSETS_URL, StaticFiles(directory=assets), name="swagger-assets")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        if assets is None:
            return HTMLResponse(
                f"<!doctype html><title>{app.title} API</title>"
                f"<p>Swagger UI is not installed (pip install swagger-ui-py). The OpenAPI "
                f'schema is at <a href="{openapi_url}">{openapi_url}</a>.</p>'
            )
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} API",
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
        )
