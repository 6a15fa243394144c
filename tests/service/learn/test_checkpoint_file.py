"""Stop-and-resume from a checkpoint equals an uninterrupted run with the same seed."""

from __future__ import annotations

import pytest
import torch

from lda.batch import Batch
from lda.evaluation.perplexity import HeldoutSet
from lda.model import LearnerConfig, StreamingLDA
from service.learn.checkpoint_file import load_checkpoint, save_checkpoint


def _data() -> tuple[list[Batch], HeldoutSet]:
    g = torch.Generator().manual_seed(0)
    docs = [
        torch.randint(40, (int(n),), generator=g).tolist()
        for n in torch.randint(5, 30, (50,), generator=g)
    ]
    batches = [Batch.from_ids(docs[i : i + 10]) for i in range(10, 50, 10)]
    return batches, HeldoutSet.from_documents(docs[:10])


@pytest.mark.parametrize("sampler", ["sgld", "sghmc", "sgrld", "sgrhmc", "scir"])
def test_resume_equals_uninterrupted(tmp_path, sampler):
    batches, heldout = _data()
    config = LearnerConfig(n_topics=4, n_words=40, sampler=sampler, sweeps=6, eval_sweeps=4)

    straight = StreamingLDA(config, seed=3)
    for batch in batches:
        straight.update(batch)
        straight.evaluate(heldout)

    first = StreamingLDA(config, seed=3)
    for batch in batches[:2]:
        first.update(batch)
        first.evaluate(heldout)
    save_checkpoint(tmp_path / "ck.pt", {"model": first.state_dict()})
    del first
    resumed = StreamingLDA.from_state_dict(load_checkpoint(tmp_path / "ck.pt")["model"])
    for batch in batches[2:]:
        resumed.update(batch)
        resumed.evaluate(heldout)

    assert torch.equal(resumed.state.theta, straight.state.theta)
    if straight.state.momentum is not None:
        assert resumed.state.momentum is not None
        assert torch.equal(resumed.state.momentum, straight.state.momentum)
    assert resumed.state.step == straight.state.step == 4
    assert resumed.docs_seen == straight.docs_seen
    assert resumed.posterior_average.count == straight.posterior_average.count
    assert torch.equal(resumed.posterior_average.total, straight.posterior_average.total)


def test_checkpoint_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    save_checkpoint(path, {"v": 1})

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken)
    with pytest.raises(OSError):
        save_checkpoint(path, {"v": 2})
    assert load_checkpoint(path) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]


@pytest.mark.parametrize("sampler", ["scir", "sgrld"])
def test_a_restored_learner_is_built_around_the_checkpoints_matrices(sampler):
    """No fresh K x W draw made only to be replaced (at K = 1,000, W = 100,000 a resuming
    worker's peak held 1.2 GB of one), and a SCIR checkpoint without a lazy chain (written on a
    GPU) restored on the CPU learns from its own theta, not a fresh one."""
    from tests.support.memory import peak_growth

    config = LearnerConfig(n_topics=100, n_words=100_000, sampler=sampler, dtype="float32")
    model = StreamingLDA(config, seed=3)
    model.update(Batch.from_ids([[1, 5, 9, 5], [70_000, 5, 99_999]]))
    state = model.state_dict()
    restored, grew = peak_growth(lambda: StreamingLDA.from_state_dict(state))
    matrix = config.n_topics * config.n_words * 4
    assert grew < matrix // 2, grew
    assert restored.state.theta.data_ptr() == state["theta"].data_ptr()
    assert torch.equal(restored.beta, model.beta)
    if sampler == "scir":
        dense = {**state, "lazy": None, "theta": state["theta"].contiguous()}
        chain = StreamingLDA.from_state_dict(dense).chain
        assert chain is not None and torch.equal(chain.theta, model.state.theta)
