"""The topic shaper (docs/model.md, "The acceptance test"): a rejected trial leaves the learner
exactly as if none had been tried; a kept one records its moves under numbers never used before;
the proposals find the dead topics, the duplicates and the documents no topic holds."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch

from lda.batch import Batch
from lda.model import LearnerConfig, StreamingLDA
from lda.prior import GAMMA_FLOOR
from lda.sgmcmc.seeds import SeedPrior
from lda.shaping import KINDS, Kind, ShapingConfig, TopicShaper, proposals
from lda.topic_ids import FREE, TopicIds

SLOTS, LIVE, W = 8, 5, 40
CONFIG = ShapingConfig(
    every=2, start_after=2, burn_in=2, eval_sweeps=4, kinds=KINDS, births=1, junk_npmi=None
)


def _batches(n: int, seed: int = 0) -> list[Batch]:
    """Documents from four word blocks of ten, each document mostly one block."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        docs = []
        for _ in range(12):
            block = int(torch.randint(4, (1,), generator=g))
            words = block * 10 + torch.randint(10, (30,), generator=g)
            docs.append(words.tolist())
        out.append(Batch.from_ids(docs))
    return out


def _learner(sampler: str = "scir") -> StreamingLDA:
    config = LearnerConfig(
        SLOTS, W, sampler=sampler, sweeps=4, corpus_size=200.0, live_topics=LIVE, eval_sweeps=4
    )
    return StreamingLDA(config, seed=1)


class Forced(TopicShaper):
    """A shaper whose trials decide by ``keep`` (and propose ``proposals[kind]`` when given):
    the acceptance is forced, everything else (the moves, the undo, the record) is real."""

    def __init__(self, keep: bool, proposals: dict[str, list[Any]] | None = None) -> None:
        super().__init__(CONFIG, seed=5, clock=lambda: 1000.0)
        self.keep, self.proposals = keep, proposals

    def _propose(self, kind: Kind, model: StreamingLDA) -> list[Any]:
        if self.proposals is None:
            return super()._propose(kind, model)
        return list(self.proposals.pop(kind, []))  # each forced once

    def _accept(self, kind: Kind, control: float, moved: float) -> bool:
        return self.keep


def test_free_slots_start_at_the_floor_and_take_no_tokens() -> None:
    model = _learner()
    assert model.topic_ids.live_slots() == list(range(LIVE))
    assert bool((model.prior.gamma[LIVE:] == GAMMA_FLOOR).all())
    counts: list[torch.Tensor] = []
    for batch in _batches(3):
        model.update(batch, documents=counts.append)
    free_share = float(counts[-1][:, LIVE:].sum() / counts[-1].sum())
    assert free_share < 1e-3


@pytest.mark.parametrize("sampler", ["scir", "sgrld"])
@pytest.mark.parametrize("forced", [True, False])
def test_a_rejected_trial_leaves_the_learner_as_if_none_was_tried(
    sampler: str, forced: bool
) -> None:
    """Every trial rejected, of the shaper's own proposals or of forced ones (a retire, a merge
    and a birth): the learner matches one that learned the same minibatches without a shaper,
    bit for bit, generators included."""
    plain, shaped = _learner(sampler), _learner(sampler)
    born = torch.ones(W, dtype=torch.float64) * 50
    proposals: dict[str, list[Any]] | None = (
        {"retire": [1], "merge": [(0, 2)], "birth": [born]} if forced else None
    )
    shaper = Forced(False, proposals)
    for batch in _batches(12):
        plain.update(batch)
        shaper.update(shaped, batch)
    assert sum(v for k, v in shaper.trials.items() if k.endswith("tried")) >= 3
    if forced:
        assert {"retire tried", "merge tried", "birth tried"} <= set(shaper.trials)
    else:
        assert shaper.trials["birth tried"] + shaper.trials["split tried"] >= 1
    assert not any(k.endswith("kept") for k in shaper.trials)
    torch.testing.assert_close(shaped.state.theta, plain.state.theta, rtol=0, atol=0)
    torch.testing.assert_close(shaped.beta_mean, plain.beta_mean, rtol=0, atol=0)
    torch.testing.assert_close(shaped.prior.gamma, plain.prior.gamma, rtol=0, atol=0)
    assert torch.equal(shaped.generator.get_state(), plain.generator.get_state())
    assert shaped.topic_ids.state_dict() == plain.topic_ids.state_dict()
    assert (shaped.docs_seen, shaped.state.step) == (plain.docs_seen, plain.state.step)


def test_kept_moves_take_new_numbers_and_answer_for_the_old() -> None:
    model = _learner()
    born = torch.zeros(W, dtype=torch.float64)
    born[30:40] = 100.0
    shaper = Forced(True, {"retire": [1], "merge": [(0, 2)], "birth": [born]})
    results = [r for batch in _batches(10) if (r := shaper.update(model, batch)) is not None]
    kinds = [r.moves[0].kind for r in results]
    assert {"retire", "merge", "birth"} <= set(kinds)
    ids = model.topic_ids
    retired, merged = ids.status(1), ids.status(2)
    assert retired.state == "retired" and retired.gone is not None
    assert retired.gone.time == 1000.0 and retired.gone.docs > 0
    assert merged.state == "merged" and merged.into == 0
    numbers = [m.topics[0] for m in ids.moves if m.kind == "birth"]
    assert numbers and min(numbers) >= LIVE  # never a number used before
    assert len(set(numbers)) == len(numbers)
    for n in numbers:
        assert ids.status(n).state == "live"
    # freed slots sit at the floor; a born one does not
    for r in results:
        for slot in r.freed:
            if ids.slots[slot] == FREE:
                assert float(model.prior.gamma[slot]) == GAMMA_FLOOR
    born_slot = ids.slot_of(numbers[0])
    assert born_slot is not None and float(model.prior.gamma[born_slot]) > GAMMA_FLOOR
    # the numbers survive the learner's checkpoint
    again = StreamingLDA.from_state_dict(model.state_dict())
    assert again.topic_ids.state_dict() == ids.state_dict()


def test_a_kept_trials_steps_are_not_counted_as_revisits() -> None:
    """A quiet worker revisits up to a ratio of ``revisited_docs``: a kept trial's burn-in
    steps must not use that budget up."""
    model = _learner()
    shaper = Forced(True, {"retire": [1], "split": []})
    results = [r for batch in _batches(6) if (r := shaper.update(model, batch)) is not None]
    assert results and shaper.trials["retire kept"] == 1
    assert model.revisited_docs == 0


def test_proposals_find_dead_topics_duplicates_and_unheld_documents() -> None:
    model = _learner()
    shaper = TopicShaper(CONFIG, seed=5)
    for batch in _batches(4):
        shaper.update(model, batch)
    assert shaper.shares is not None
    shaper.shares[:LIVE] = torch.tensor([0.3, 0.3, 0.001, 0.2, 0.199], dtype=torch.float64)
    shaper.learned += CONFIG.start_after
    assert shaper._propose("retire", model) == [2]
    # two topics made one: topic 4 a copy of topic 3
    theta = model.chain.lazy.theta  # type: ignore[attr-defined]
    theta[4] = theta[3]
    model.chain.lazy.total[4] = model.chain.lazy.total[3]  # type: ignore[attr-defined]
    assert shaper._propose("merge", model) == [(3, 4)]  # the smaller share merges away
    born = shaper._propose("birth", model)
    assert len(born) == CONFIG.births and bool((born[0] >= 0).all()) and float(born[0].sum()) > 0
    # a broad topic splits: each word's fraction in [0, 1], not all on one side
    shaper.shares[:LIVE] = torch.tensor([0.6, 0.1, 0.1, 0.1, 0.1], dtype=torch.float64)
    # 12 documents a minibatch; on 40 words the halves share top words unless few are compared
    shaper.config = dataclasses.replace(CONFIG, birth_docs=2, min_length=4, top=3, overlap=3)
    split = shaper._propose("split", model)
    assert split, "the broadest topic's documents give two sides"
    if split:
        k, fraction = split[0]
        assert k in range(LIVE) and fraction.shape == (W,)
        assert bool(((fraction >= 0) & (fraction <= 1)).all())
        assert 0.0 < float(fraction.min()) < float(fraction.max()) < 1.0


def test_a_topic_whose_words_never_meet_is_retired_as_junk() -> None:
    """Top words drawn from the four blocks (no document mixes blocks) have a negative NPMI in
    the recent documents: retired like a dead topic; a block's own words are not."""
    model = _learner()
    shaper = TopicShaper(dataclasses.replace(CONFIG, junk_npmi=0.0), seed=5)
    for batch in _batches(4):
        shaper.update(model, batch)
    lazy = model.chain.lazy  # type: ignore[attr-defined]
    mixed = torch.tensor([0, 10, 20, 30, 1, 11, 21, 31, 2, 12])
    lazy.theta[3] = 1e-3
    lazy.theta[3, mixed] = 1e3
    lazy.total[3] = lazy.theta[3]
    lazy.theta[0] = 1e-3
    lazy.theta[0, :10] = 1e3  # block 0's words
    lazy.total[0] = lazy.theta[0]
    documents = [d for batch in shaper.recent for d in batch.documents]
    assert proposals.junk(model, [0, 3], documents, shaper.config) == [3]


def test_a_seeded_topic_is_never_retired_or_merged_away() -> None:
    model = _learner()
    shaper = TopicShaper(CONFIG, seed=5)
    for batch in _batches(4):
        shaper.update(model, batch)
    assert shaper.shares is not None
    shaper.shares[:LIVE] = torch.tensor([0.3, 0.3, 0.001, 0.2, 0.199], dtype=torch.float64)
    shaper.learned += CONFIG.start_after
    theta = model.chain.lazy.theta  # type: ignore[attr-defined]
    theta[4] = theta[3]
    model.chain.lazy.total[4] = model.chain.lazy.total[3]  # type: ignore[attr-defined]
    model.set_seeds(SeedPrior.of([(2, 1, 1.0), (4, 35, 1.0)]))
    assert shaper._propose("retire", model) == []
    assert shaper._propose("merge", model) == [(4, 3)]  # the seeded one is kept


def test_topic_ids_follow_a_label_move_and_refuse_a_bad_state() -> None:
    ids = TopicIds.start(4, 3)
    ids.follow([1, 0, 2, 3])
    assert ids.slots == [1, 0, 2, FREE]
    with pytest.raises(ValueError, match="permutation"):
        ids.follow([0, 0, 1, 2])
    state = ids.state_dict()
    state["slots"] = [0, 0, 1, FREE]
    with pytest.raises(ValueError, match="repeat"):
        TopicIds.from_state_dict(state)


class Splitting(Forced):
    """Forced to keep one split of topic 0 whose second half (the new slot) takes the topic's
    own top words when ``away``, else everything but them."""

    def __init__(self, away: bool) -> None:
        super().__init__(True, {})
        self.away, self.done = away, False

    def _propose(self, kind: Kind, model: StreamingLDA) -> list[Any]:
        if kind != "split" or self.done:
            return []
        self.done = True
        top = model.top_words(10)[0][0]
        fraction = torch.full((W,), 1.0 if self.away else 0.0, dtype=torch.float64)
        fraction[top] = 0.0 if self.away else 1.0
        return [(0, fraction)]


@pytest.mark.parametrize("away", [True, False])
def test_a_split_topics_number_stays_with_the_half_that_kept_its_words(away: bool) -> None:
    """The halves trade numbers when the new slot's half kept more of the topic's words: a
    relabelling only, so the chain is bit for bit that of the split without the trade."""
    model, plain = _learner(), _learner()
    plain.topic_ids.trade = lambda parent, born: None  # type: ignore[method-assign]
    shaper, other = Splitting(away), Splitting(away)
    results = [r for batch in _batches(6) if (r := shaper.update(model, batch)) is not None]
    for batch in _batches(6):
        other.update(plain, batch)
    [reshaped] = results
    [move] = reshaped.moves
    new, parent = move.topics
    ids = model.topic_ids
    assert (parent, new) == (0, LIVE) and ids.status(parent).state == "live"
    free = LIVE  # the first free slot took the second half
    if away:
        assert (ids.slot_of(parent), ids.slot_of(new)) == (free, 0)
        assert (reshaped.moved, reshaped.born) == ({0: free}, (0,))
    else:
        assert (ids.slot_of(parent), ids.slot_of(new)) == (0, free)
        assert (reshaped.moved, reshaped.born) == ({}, (free,))
    kept = len(set(move.before[0]) & set(move.after[1]))  # the parent's words, after
    assert kept > len(set(move.before[0]) & set(move.after[0]))
    torch.testing.assert_close(model.state.theta, plain.state.theta, rtol=0, atol=0)
    torch.testing.assert_close(model.beta_mean, plain.beta_mean, rtol=0, atol=0)
