"""Requests waiting for an inference thread are inferred together.

Whenever one of the ``threads`` is free, it takes every waiting request (their texts up to
``MAX_TEXTS``, at least one request whole) as one batch: under many concurrent clients a thread
does one batched fixed point instead of many small ones, so the documents answered per second
grow with the clients instead of falling as they compete for the cores and the event loop.
Each text's answer is the one it gets alone (:mod:`service.api.infer.proportions`).
"""

from __future__ import annotations

import asyncio
import functools
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Generic, TypeVar

T = TypeVar("T")
# Texts of one batch at most (several requests); a larger single request is taken whole.
MAX_TEXTS = 256


class Batcher(Generic[T]):
    """Runs ``infer(texts) -> answers`` on ``threads`` threads of ``pool``, batching waiters.

    Lives on one event loop (the app's): no locks needed.
    """

    def __init__(self, pool: Executor, threads: int, infer: Callable[[list[str]], list[T]]) -> None:
        self.pool = pool
        self.threads = threads
        self.infer = infer
        self.busy = 0
        self.waiting: deque[tuple[Sequence[str], asyncio.Future[list[T]]]] = deque()
        self.batches = 0  # batches run so far (for tests and curiosity)

    async def __call__(self, texts: Sequence[str]) -> list[T]:
        """The answers to ``texts``, once a thread has computed them with whatever else waits."""
        future: asyncio.Future[list[T]] = asyncio.get_running_loop().create_future()
        self.waiting.append((texts, future))
        self._dispatch()
        return await future

    def _dispatch(self) -> None:
        loop = asyncio.get_running_loop()
        while self.busy < self.threads and self.waiting:
            taken: list[tuple[Sequence[str], asyncio.Future[list[T]]]] = []
            count = 0
            while self.waiting and (not taken or count + len(self.waiting[0][0]) <= MAX_TEXTS):
                texts, future = self.waiting.popleft()
                if future.done():  # its client went away while it waited
                    continue
                taken.append((texts, future))
                count += len(texts)
            if not taken:
                return
            batch = [text for texts, _ in taken for text in texts]
            self.busy += 1
            self.batches += 1
            running = loop.run_in_executor(self.pool, self.infer, batch)
            running.add_done_callback(functools.partial(self._finished, taken=taken))

    def _finished(
        self,
        done: asyncio.Future[list[T]],
        *,
        taken: list[tuple[Sequence[str], asyncio.Future[list[T]]]],
    ) -> None:
        self.busy -= 1
        error = done.exception()
        answers = None if error is not None else done.result()
        start = 0
        for texts, future in taken:
            if not future.done():
                if error is not None:
                    future.set_exception(error)
                else:
                    assert answers is not None
                    future.set_result(answers[start : start + len(texts)])
            start += len(texts)
        self._dispatch()
