"""The batcher: requests that wait for a busy inference thread are run together, each getting
its own answers, and a failure reaches every request of its batch."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from service.api.infer.batcher import Batcher


def test_waiting_requests_go_together_and_get_their_own_answers() -> None:
    release = threading.Event()
    batches: list[list[str]] = []

    def infer(texts: list[str]) -> list[str]:
        batches.append(texts)
        release.wait(10)
        return [t.upper() for t in texts]

    async def main() -> list[list[str]]:
        with ThreadPoolExecutor(1) as pool:
            batcher = Batcher(pool, 1, infer)
            first = asyncio.create_task(batcher(["a"]))
            await asyncio.sleep(0.05)  # the one thread is busy with it
            rest = [asyncio.create_task(batcher(texts)) for texts in (["b"], ["c", "d"], ["e"])]
            await asyncio.sleep(0.05)
            release.set()
            return await asyncio.gather(first, *rest)

    answers = asyncio.run(main())
    assert answers == [["A"], ["B"], ["C", "D"], ["E"]]
    assert batches == [["a"], ["b", "c", "d", "e"]]


def test_a_failure_reaches_every_request_of_its_batch() -> None:
    def infer(texts: list[str]) -> list[str]:
        raise LookupError("no model yet")

    async def main() -> None:
        with ThreadPoolExecutor(1) as pool:
            batcher = Batcher(pool, 1, infer)
            results = await asyncio.gather(batcher(["a"]), batcher(["b"]), return_exceptions=True)
            assert all(isinstance(r, LookupError) for r in results)
            assert batcher.busy == 0

    asyncio.run(main())


@pytest.mark.parametrize("threads", [1, 2])
def test_many_requests_all_answered(threads: int) -> None:
    async def main() -> None:
        with ThreadPoolExecutor(threads) as pool:
            batcher = Batcher(pool, threads, lambda texts: [len(t) for t in texts])
            answers = await asyncio.gather(*(batcher(["x" * i]) for i in range(100)))
            assert answers == [[i] for i in range(100)]
            assert batcher.batches < 100

    asyncio.run(main())
