"""``streamlda worker``: run the learner on the article stream until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from pathlib import Path
from types import FrameType

import redis
import torch

from lda.model import resolve_device
from service.errors import CommandError
from service.ingest.queue import ArticleQueue, QueueConfig
from service.keys import reservoir_key
from service.learn.checkpoint_file import CheckpointRefused
from service.learn.checkpointer import CheckpointConfig, Checkpointer
from service.learn.coordinator import Coordinator, GroupCoordinator, SoloCoordinator
from service.learn.distributed import (
    DistributedReducer,
    Group,
    environment_group,
    join,
    leave,
)
from service.learn.entry_ref import EntryRef
from service.learn.heldout_store import HeldoutStore
from service.learn.model_store import CHECKPOINT_NAME
from service.learn.publisher import PublishConfig, Publisher
from service.learn.reservoir import Reservoir
from service.learn.runtime import set_threads
from service.learn.seeds import SeedsError, tokenised
from service.learn.session import CannotLearn, LearningSession
from service.learn.topic_record import RecordConfig
from service.learn.topic_watch import TopicWatch
from service.learn.worker import Worker, WorkerConfig
from service.process import lower_priority
from service.redact import configure_logging
from service.seeds_file import given_seeds
from service.settings import Settings, add_flags
from service.store.redis_client import RedisURLError, connect
from service.store.redis_retry import RedisRetry, RetryConfig
from service.store.topic_seeds import TopicSeeds

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``worker`` subcommand."""
    p = subparsers.add_parser(
        "worker",
        help="learn topics from the Redis stream and publish them for the API",
        description="Read minibatches from the stream, learn with SG-MCMC, checkpoint, and "
        "publish topics, perplexity and stats to Redis. SIGTERM: checkpoint, then exit.",
    )
    add_flags(p, "worker")
    p.set_defaults(func=run)


def _install_stop_handlers(stop: threading.Event) -> None:
    """First SIGINT/SIGTERM: finish the minibatch in hand, checkpoint, exit. Second: exit now."""

    def handle(signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        log.warning(
            "signal %d: checkpointing after the minibatch in hand (again to stop now)", signum
        )
        stop.set()

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)


def run(settings: Settings, args: argparse.Namespace) -> int:
    """The ``worker`` command: learn until stopped; exit 0 after the final checkpoint."""
    configure_logging()
    if not settings.store.redis_url:
        raise CommandError("no Redis: pass --redis URL or set STREAMLDA_REDIS_URL")
    try:
        device = resolve_device(settings.model.device)
        group = environment_group()
    except ValueError as exc:
        raise CommandError(str(exc)) from exc
    if settings.model.vocab is not None and not settings.model.vocab.is_file():
        raise CommandError(f"vocabulary file not found: {settings.model.vocab}")
    _seeds(settings)  # a bad seeds file stops the command before anything starts
    try:
        client = connect(settings.store)
    except RedisURLError as exc:
        raise CommandError(str(exc)) from None
    set_threads(settings.model.threads)
    lower_priority(settings.worker.worker_nice)
    stop = threading.Event()
    _install_stop_handlers(stop)
    log.info(
        "worker started (pid %d): stream %s, group %s, consumer %s; SIGTERM checkpoints and stops",
        os.getpid(),
        settings.queue.stream,
        settings.queue.group,
        settings.worker.consumer_name,
    )
    try:
        _learn(settings, client, stop, group, device)
    except (CannotLearn, CheckpointRefused) as exc:
        # Retrying cannot help: end with one line (exit 1), whatever the supervisor does next.
        raise SystemExit(f"streamlda worker: {exc}") from exc
    log.info("worker stopped")
    return 0


def _learn(
    settings: Settings,
    client: redis.Redis,
    stop: threading.Event,
    group: Group,
    device: torch.device,
) -> None:
    """One worker, or one rank of a group, until ``stop``."""
    if group.world_size == 1:
        build_worker(settings, client, stop).run()
    else:
        if device.type == "cuda":
            torch.cuda.set_device(group.local_rank)
            device = torch.device("cuda", group.local_rank)  # "cuda" now means this GPU
        join(group, device)
        log.info(
            "rank %d of %d joined the group (pid %d)", group.rank, group.world_size, os.getpid()
        )
        try:
            coordinator = GroupCoordinator(group, DistributedReducer(device))
            build_worker(settings, client, stop, coordinator).run()
        finally:
            leave()


def build_worker(
    settings: Settings,
    client: redis.Redis,
    stop: threading.Event,
    coordinator: Coordinator | None = None,
) -> Worker:
    """The worker's parts from the settings: alone (no ``coordinator``) or a group's rank. The
    rank that decides publishes; the others have no publisher."""
    coordinator = coordinator or SoloCoordinator()
    device = resolve_device(settings.model.device)
    retry = RedisRetry(settings.part(RetryConfig), stop)
    queue = ArticleQueue(client, settings.part(QueueConfig))
    publisher = None
    if coordinator.leads:
        publish = settings.part(PublishConfig)
        watch = TopicWatch(settings.publish.uncertainty_samples)
        publisher = Publisher(client, retry, publish, watch, str(device))
    checkpoints = CheckpointConfig(
        settings.worker.checkpoint_every_s,
        settings.worker.checkpoint_max_unacked,
        settings.worker.stop_ack_wait_s,
    )
    path = Path(settings.store.data_dir) / CHECKPOINT_NAME
    session: LearningSession[EntryRef] = LearningSession(
        settings.model,
        device,
        holds_out=coordinator.leads,
        ranks=coordinator.ranks,
        shaping=settings.shaping.config(),
    )
    config = settings.part(
        WorkerConfig, consumer=settings.worker.consumer_name + coordinator.consumer_suffix
    )
    return Worker(
        config,
        client=client,
        queue=queue,
        retry=retry,
        session=session,
        checkpointer=Checkpointer(path, device, checkpoints, settings.recorded(), queue.ack, retry),
        publisher=publisher,
        coordinator=coordinator,
        heldout_store=HeldoutStore(client, settings.queue.heldout_key),
        device=device,
        stop=stop,
        reservoir=(
            Reservoir(
                client,
                reservoir_key(coordinator.rank),
                settings.worker.reservoir_size,
                settings.model.seed + coordinator.rank,
            )
            if settings.worker.revisit
            else None
        ),
        record=settings.part(RecordConfig) if settings.publish.topic_record else None,
        seeds=_seeds(settings),
    )


def _seeds(settings: Settings) -> dict[int, TopicSeeds]:
    """The seeds file's topics, tokenised, at the setting seed_strength (CommandError: why
    the file cannot be used)."""
    try:
        return tokenised(
            given_seeds(settings.model.seeds, settings.model.topics), settings.model.seed_strength
        )
    except SeedsError as exc:
        raise CommandError(f"seeds file {settings.model.seeds}: {exc}") from exc
