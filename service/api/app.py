"""``create_app(settings)``: the FastAPI application, wired from one Settings object."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from service.api import docs, errors
from service.api.limits import BodyLimitMiddleware
from service.api.model_cache import ModelCache
from service.api.routes import admin, health, infer, metrics, page, perplexity, stats, topics
from service.redis_client import connect
from service.settings import Settings

DESCRIPTION = (
    "Topics learned online from a stream of Wikipedia articles with SG-MCMC LDA. "
    "Reads Redis only: run as many instances as needed."
)


def create_app(settings: Settings) -> FastAPI:
    """The API app; it connects to ``settings.redis_url`` lazily, on the first request."""
    if not settings.redis_url:
        raise ValueError("the API needs a Redis URL (--redis or STREAMLDA_REDIS_URL)")
    app = FastAPI(title="streamlda", description=DESCRIPTION, docs_url=None, redoc_url=None)
    app.state.settings = settings
    app.state.redis = connect(settings, timeout=settings.redis_timeout)
    app.state.model_cache = ModelCache()
    errors.install(app)
    docs.install(app)
    for module in (topics, perplexity, stats, infer, health, metrics, admin, page):
        app.include_router(module.router)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_infer_bytes, paths={"/infer"})
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    return app
