"""The pipe between the worker and its scoring process: messages arrive whole and in order,
arrays out of band (no pickled copy of a beta) and writable on the other side."""

from __future__ import annotations

import multiprocessing

import numpy as np

from service.learn.scoring_channel import Receiver, Sender


def test_messages_with_arrays_arrive_equal_writable_and_in_order():
    reading, writing = multiprocessing.Pipe(duplex=False)
    sender, receiver = Sender(writing, "test-feed"), Receiver(reading)
    beta = np.random.default_rng(0).random((30, 700)).astype(np.float32)
    messages = [
        ("score", 1, 100, beta),
        ("reset", 2, (0.1, 10, "exact"), {"total": None, "count": 0}, [[1, 2], [3]]),
        None,
    ]
    for message in messages:
        sender.put(message)
    got = [receiver.get(timeout=10) for _ in messages]
    sender.close(timeout=10)
    assert got[0][:3] == ("score", 1, 100)
    assert np.array_equal(got[0][3], beta) and got[0][3].flags.writeable
    assert got[1] == messages[1] and got[2] is None
    receiver.close()
