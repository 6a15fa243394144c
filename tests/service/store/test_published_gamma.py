"""A learned, per-topic gamma is published with the model and read back exactly; a hash with a
scalar gamma (as older workers wrote it) reads as the symmetric prior; /infer's fold-in takes
either."""

from __future__ import annotations

import numpy as np
import pytest
import redis
import torch

from lda.inference import infer_topics
from service.api.infer.proportions import infer_batch, word_columns
from service.keys import MODEL_KEY
from service.store.published_model import publish_model, read_model

LEARNED = (0.01, 0.2, 0.05)


@pytest.mark.slow
@pytest.mark.parametrize("whole", [False, True], ids=["in-parts", "whole-hash"])
def test_a_learned_gamma_round_trips_and_a_scalar_one_reads_symmetric(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch, whole: bool
) -> None:
    import service.store.published_model as schema

    if whole:
        monkeypatch.setattr(schema, "MODEL_READ_TRIES", 1)  # straight to the atomic read
    vocab = ["apple", "banana", "cherry", "date"]
    publish_model(redis_client, torch.rand(3, 4), vocab, docs_seen=5, gamma=LEARNED)
    model = read_model(redis_client)
    assert model is not None and model.gamma == LEARNED
    # An older reader sees the mean as a symmetric gamma.
    assert float(redis_client.hget(MODEL_KEY, "gamma") or b"nan") == pytest.approx(sum(LEARNED) / 3)
    publish_model(redis_client, torch.rand(3, 4), vocab, docs_seen=6, gamma=0.1)
    assert redis_client.hget(MODEL_KEY, "gamma_topics") is None
    older = read_model(redis_client)
    assert older is not None and older.gamma == 0.1
    with pytest.raises(ValueError, match="gamma"):
        publish_model(redis_client, torch.rand(3, 4), vocab, docs_seen=7, gamma=(0.1, 0.2))


def test_fold_in_takes_a_per_topic_gamma_as_the_torch_fixed_point() -> None:
    g = torch.Generator().manual_seed(0)
    beta = torch._sample_dirichlet(torch.full((3, 8), 0.5, dtype=torch.float64), generator=g)
    docs = [[0, 1, 1, 5], [2, 3], []]
    compiled = infer_batch(word_columns(beta.numpy()), docs, LEARNED)
    for doc, pi in zip(docs, compiled, strict=True):
        reference = infer_topics(beta, torch.tensor(doc, dtype=torch.long), LEARNED)
        np.testing.assert_allclose(pi, reference, rtol=1e-9, atol=1e-12)
    symmetric = infer_batch(word_columns(beta.numpy()), docs, 0.1)
    assert not np.allclose(symmetric[0], compiled[0])
