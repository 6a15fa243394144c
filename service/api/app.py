"""``create_app(settings)``: the FastAPI application, wired from one Settings object.

This is the edge where the settings are read: every part below it is given only the values it
needs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import partial

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from service.api.http import errors, openapi_docs
from service.api.http.admin_gate import AdminGateMiddleware
from service.api.http.body_limits import BodyLimitMiddleware, small_body_limit
from service.api.http.prometheus import LatencyMiddleware, RequestLatency
from service.api.infer.admission import ConcurrencyLimitMiddleware
from service.api.infer.batcher import Batcher
from service.api.infer.model_cache import ModelCache
from service.api.infer.proportions import warm_up
from service.api.reads import pipeline_status
from service.api.reads.prerendered import FastReads
from service.api.reads.refresher import View, ViewConfig
from service.api.routes import (
    admin,
    export,
    health,
    infer,
    metrics,
    page,
    perplexity,
    search,
    stats,
    topic_events,
    topic_history,
    topic_names,
    topic_seeds,
    topics,
    words,
)
from service.settings import Settings
from service.store.redis_client import connect

# Each folds texts in on the inference threads: bounded bodies, a cap on those taken at once.
INFER_PATHS = frozenset({"/infer", "/infer/batch", "/similar"})
DESCRIPTION = (
    "Topics learned online from a stream of Wikipedia articles with SG-MCMC LDA. "
    "Reads Redis only: run as many instances as needed. Topics, perplexity, stats and metrics "
    "are served from memory, refreshed every STREAMLDA_API_REFRESH_S seconds, with ETags."
)


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Read Redis once and compile the inference kernels before serving, refresh in the
    background, stop the inference pools at exit."""
    view: View = app.state.view
    await asyncio.to_thread(view.refresh)
    await asyncio.to_thread(warm_up)
    view.start()
    try:
        yield
    finally:
        await asyncio.to_thread(view.stop)
        app.state.infer_pool.shutdown(wait=False, cancel_futures=True)
        if app.state.infer_helpers is not None:
            app.state.infer_helpers.shutdown(wait=False, cancel_futures=True)


def create_app(settings: Settings) -> FastAPI:
    """The API app; it connects to ``settings.store.redis_url`` lazily, on the first request."""
    if not settings.store.redis_url:
        raise ValueError("the API needs a Redis URL (--redis or STREAMLDA_REDIS_URL)")
    app = FastAPI(
        title="streamlda",
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
        lifespan=_lifespan,
        # /topics/ is no path of the schema: a 404, not a 307 to /topics the schema never lists
        redirect_slashes=False,
    )
    app.state.redis_url = settings.store.redis_url  # named (redacted) in errors
    app.state.redis_timeout = settings.api.redis_timeout  # an admin request's wait for the view
    app.state.admin_token = settings.api.admin_token
    app.state.redis = connect(settings.store, timeout=settings.api.redis_timeout)
    app.state.model_cache = ModelCache(settings.publish.topic_words)
    sources = pipeline_status.StreamKeys(
        settings.queue.stream, settings.queue.group, settings.queue.counters_key
    )
    config = ViewConfig(
        settings.api.api_refresh_s,
        settings.api.render_cache,
        settings.publish.topic_words,
        settings.store.redis_url,
        sources,
        settings.worker.worker_silent_after_s,
    )
    app.state.view = View(app.state.redis, config)
    app.state.topic_history = app.state.view.history
    app.state.infer_pool = ThreadPoolExecutor(settings.api.infer_concurrency, "infer")
    # Each inference thread splits its batch over infer_threads threads: itself and helpers.
    helpers = settings.api.infer_concurrency * (settings.api.inference_threads - 1)
    app.state.infer_helpers = ThreadPoolExecutor(helpers, "infer-help") if helpers else None
    fold = {
        "client": app.state.redis,
        "cache": app.state.model_cache,
        "iterations": settings.api.infer_iterations,
        "tolerance": settings.api.infer_tolerance,
        "threads": settings.api.inference_threads,
        "helpers": app.state.infer_helpers,
    }
    concurrency = settings.api.infer_concurrency
    app.state.batcher = Batcher(
        app.state.infer_pool, concurrency, partial(infer.infer_texts, **fold)
    )
    app.state.search_batcher = Batcher(
        app.state.infer_pool,
        concurrency,
        partial(search.search_texts, most=settings.api.search_limit_max, **fold),
    )
    errors.install(app)
    openapi_docs.install(app)
    app.include_router(topic_events.router)  # before /topics/{topic_id}, which takes any name
    app.include_router(topics.router(settings.publish.topic_words))
    app.include_router(topic_history.router)
    app.include_router(page.router(settings.api.page_refresh_s))
    app.include_router(topic_names.router(settings.api.topic_name_max))
    app.include_router(
        topic_seeds.router(
            settings.api.seed_words_max,
            settings.api.seed_strength_max,
            settings.model.seed_strength,
            settings.model.topics,
        )
    )
    app.include_router(infer.router(settings.api.max_infer_texts))
    app.include_router(
        search.router(
            settings.api.search_limit_max,
            queue=settings.api.infer_queue,
            retry_after_s=settings.api.infer_retry_after_s,
        )
    )
    for module in (perplexity, stats, words, health, metrics, admin, export):
        app.include_router(module.router)
    # The last added is the outermost: the admin token is checked from the headers alone; the
    # caps on requests taken decide before the body is read; every body is read (size and time
    # limits) before the work waits for a thread.
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=small_body_limit(settings.api.topic_name_max, settings.api.seed_words_max),
        timeout_s=settings.api.body_timeout_s,
        limits=dict.fromkeys(INFER_PATHS, settings.api.max_infer_bytes),
    )
    app.add_middleware(
        ConcurrencyLimitMiddleware,
        limit=1,
        retry_after_s=export.RETRY_AFTER_S,
        paths={export.PATH},
        taken="an export is being built",
    )
    app.add_middleware(
        ConcurrencyLimitMiddleware,
        limit=settings.api.infer_queue,
        retry_after_s=settings.api.infer_retry_after_s,
        paths=INFER_PATHS,
    )
    app.add_middleware(AdminGateMiddleware, admin_token=settings.api.admin_token)
    if settings.api.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.api.cors_origins,
            allow_methods=["GET", "POST", "PUT", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "If-None-Match"],
            expose_headers=["ETag"],
        )
    app.state.latency = RequestLatency()
    app.add_middleware(LatencyMiddleware, latency=app.state.latency)  # all the app's requests
    # Outermost: the polled reads answered from the view's bytes, before any of the above.
    app.add_middleware(
        FastReads,
        view=app.state.view,
        latency=app.state.latency,
        topic_words=settings.publish.topic_words,
    )
    return app
