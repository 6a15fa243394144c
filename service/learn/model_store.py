"""A learner on disk: the checkpoint (chain, RNG states, vocabulary, settings) and its exports.

Shared by ``streamlda train`` and the worker so both write and resume the same format.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lda.model import StreamingLDA
from lda.vocab import Vocabulary
from service.learn.checkpoint_file import load_checkpoint, save_checkpoint

CHECKPOINT_NAME = "checkpoint.pt"


def save_model(
    path: str | Path,
    model: StreamingLDA,
    vocabulary: Vocabulary,
    settings: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> None:
    """Write one atomic checkpoint holding everything needed to resume (``settings``: the
    recorded settings, without secrets)."""
    payload = {
        "model": model.state_dict(),
        "vocabulary": vocabulary.words,
        "vocabulary_version": vocabulary.version,
        "settings": settings,
        "extra": extra or {},
    }
    save_checkpoint(path, payload)


def load_model(
    path: str | Path, device: torch.device | str = "cpu"
) -> tuple[StreamingLDA, Vocabulary, dict[str, Any]]:
    """The learner, its vocabulary and the payload's ``extra`` from a checkpoint."""
    payload = load_checkpoint(path, device)
    model = StreamingLDA.from_state_dict(payload["model"], device)
    vocabulary = Vocabulary(payload["vocabulary"], int(payload.get("vocabulary_version", 0)))
    return model, vocabulary, dict(payload.get("extra", {}))


def topics_summary(model: StreamingLDA, vocabulary: Vocabulary, top: int) -> list[dict[str, Any]]:
    """Top words and weights of each live topic in beta_mean (what is served), most probable
    first, under its number (lda.topic_ids; the slot while K is fixed)."""
    ids, weights = model.top_words(top)
    numbers = model.topic_ids.slots
    return [
        {
            "id": numbers[k],
            "words": [
                {"word": vocabulary.words[int(i)], "weight": float(w)}
                for i, w in zip(ids[k].tolist(), weights[k].tolist(), strict=True)
            ],
        }
        for k in model.topic_ids.live_slots()
    ]


def _save_matrix(path: Path, beta: torch.Tensor) -> None:
    """A K x W matrix as float32 .npy, the format numpy and other tools load directly."""
    np.save(path, beta.detach().to("cpu", torch.float32).numpy())


def export_model(
    out_dir: str | Path, model: StreamingLDA, vocabulary: Vocabulary, top: int
) -> None:
    """topics.json and beta.npy (K x W float32) of beta_mean, the estimate served; beta-sample.npy,
    the chain's current sample (kept: it is what the chain is); vocab.txt, the column order.
    The live topics only, in the order of topics.json's numbers, with their gamma_k."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    live = model.topic_ids.live_slots()
    summary = {
        "sampler": model.config.sampler,
        "docs_seen": model.docs_seen,
        "estimate": "mean",
        "mean_decay": model.config.mean_decay,
        "gamma": [float(model.prior.gamma[k]) for k in live],
        "topics": topics_summary(model, vocabulary, top),
    }
    (out / "topics.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    _save_matrix(out / "beta.npy", model.beta_mean[live])
    _save_matrix(out / "beta-sample.npy", model.beta[live])
    vocabulary.save(out / "vocab.txt")
