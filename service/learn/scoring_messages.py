"""The messages between the worker's :class:`~service.learn.evaluator.Evaluator` and its
scoring process (:mod:`service.learn.scoring_process`), in one place both sides import.

In: ``("reset", epoch, (gamma, sweeps, method), packed scorer state, held-out documents)``,
``("gamma", epoch, gamma)`` (a learned prior moved: the scores after it use it),
``("score", epoch, docs_seen, beta, pinned topics, each slot's topic number or None)`` and
``None`` (exit).
Out: ``("scored", epoch, docs_seen, perplexity, averaged, coherence, diversity, topics, packed
state)``. A scorer state crosses the process boundary packed by :func:`pack_state` (numpy arrays,
pickled by value).
"""

from __future__ import annotations

from typing import Any

import torch


def pack_state(state: dict[str, Any]) -> dict[str, Any]:
    """A scorer ``state_dict`` as numpy arrays (pickled between processes by value)."""
    average = state["posterior_average"]
    total = average["total"]
    return {
        "generator": state["generator"].numpy().copy(),
        "total": None if total is None else total.detach().cpu().double().numpy().copy(),
        "count": int(average["count"]),
    }


def unpack_state(packed: dict[str, Any]) -> dict[str, Any]:
    """The scorer ``state_dict`` of :func:`pack_state`'s output (tensors on the CPU)."""
    total = packed["total"]
    return {
        "generator": torch.from_numpy(packed["generator"].copy()),
        "posterior_average": {
            "total": None if total is None else torch.from_numpy(total.copy()),
            "count": int(packed["count"]),
        },
    }
