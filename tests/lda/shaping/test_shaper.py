"""The topic shaper (docs/model.md, "The shaper"): a decision that keeps nothing leaves the
learner exactly as if there were no shaper; kept moves are recorded under numbers never used
before; the proposals find the dead topics, the duplicates and the junk; a duplicate pair is
merged by its own score."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch

from lda.batch import Batch
from lda.model import LearnerConfig, StreamingLDA
from lda.prior import GAMMA_FLOOR
from lda.sgmcmc.seeds import SeedPrior
from lda.shaping import Kind, ShapingConfig, TopicShaper, proposals
from lda.shaping.proposals import Window
from lda.shaping.shaper import Propose
from lda.topic_ids import FREE, TopicIds

SLOTS, LIVE, W = 8, 5, 40
CONFIG = ShapingConfig(every=2, start_after=2, window=4, births=1, junk_npmi=None)


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


def forced(made: dict[str, list[Any]]) -> Propose:
    """Proposals ``made[kind]``, each kind's once (then nothing)."""

    def propose(kind: Kind, model: StreamingLDA, shaper: Window) -> list[Any]:
        return list(made.pop(kind, []))

    return propose


def _shaper(keep: bool, made: dict[str, list[Any]] | None = None) -> TopicShaper:
    """A shaper whose decisions keep every move or none (of ``made`` when given, else of its
    own proposals): the scores, the moves and the record are real."""
    return TopicShaper(
        CONFIG,
        seed=5,
        clock=lambda: 1000.0,
        propose=None if made is None else forced(made),
        accept=lambda kind, gain: keep,
    )


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
@pytest.mark.parametrize("forcing", [True, False])
def test_a_decision_that_keeps_nothing_leaves_the_learner_as_if_none_was_made(
    sampler: str, forcing: bool
) -> None:
    """Every move refused, of the shaper's own proposals or of forced ones (a retire, a merge
    and a split): the learner matches one that learned the same minibatches without a shaper,
    bit for bit, generators included."""
    plain, shaped = _learner(sampler), _learner(sampler)
    half = torch.full((W,), 0.5, dtype=torch.float64)
    made = {"retire": [1], "merge": [(0, 2)], "split": [(3, half)]} if forcing else None
    shaper = _shaper(False, made)
    for batch in _batches(12):
        plain.update(batch)
        shaper.update(shaped, batch)
    scored = {k for k, v in shaper.decisions.items() if k.endswith("scored") and v}
    if forcing:
        assert {"retire scored", "merge scored", "split scored"} <= scored
    else:
        assert scored, shaper.decisions
    assert not any(k.endswith("kept") for k in shaper.decisions)
    torch.testing.assert_close(shaped.state.theta, plain.state.theta, rtol=0, atol=0)
    torch.testing.assert_close(shaped.beta_mean, plain.beta_mean, rtol=0, atol=0)
    torch.testing.assert_close(shaped.prior.gamma, plain.prior.gamma, rtol=0, atol=0)
    assert torch.equal(shaped.generator.get_state(), plain.generator.get_state())
    assert shaped.topic_ids.state_dict() == plain.topic_ids.state_dict()
    assert (shaped.docs_seen, shaped.state.step) == (plain.docs_seen, plain.state.step)


def test_kept_moves_take_new_numbers_and_answer_for_the_old() -> None:
    model = _learner()
    shaper = _shaper(True, {"retire": [1], "merge": [(0, 2)]})
    results = [r for batch in _batches(4) if (r := shaper.update(model, batch)) is not None]
    half = torch.full((W,), 0.5, dtype=torch.float64)
    shaper.propose = forced({"split": [(3, half)]})
    results += [r for batch in _batches(4, 1) if (r := shaper.update(model, batch)) is not None]
    kinds = [m.kind for r in results for m in r.moves]
    assert {"retire", "merge", "birth"} <= set(kinds)
    ids = model.topic_ids
    retired, merged = ids.status(1), ids.status(2)
    assert retired.state == "retired" and retired.gone is not None
    assert retired.gone.time == 1000.0 and retired.gone.docs > 0
    assert merged.state == "merged" and merged.into == 0
    numbers = [m.topics[0] for m in ids.moves if m.kind == "birth"]
    assert numbers and min(numbers) >= LIVE  # never a number used before
    for n in numbers:
        assert ids.status(n).state == "live"
    # a decision's freed slots sit at the floor and are not taken in the same decision
    first = results[0]
    assert set(first.freed) == {1, 2} and first.merged == {2: 0} and not first.born
    for slot in first.freed:
        assert float(model.prior.gamma[slot]) == GAMMA_FLOOR or ids.slots[slot] != FREE
    born_slot = ids.slot_of(numbers[0])
    assert born_slot is not None and float(model.prior.gamma[born_slot]) > GAMMA_FLOOR
    # the numbers survive the learner's checkpoint
    again = StreamingLDA.from_state_dict(model.state_dict())
    assert again.topic_ids.state_dict() == ids.state_dict()


def test_a_duplicate_pair_is_merged_by_its_own_score() -> None:
    """Topic 4 made a copy of topic 3: the shaper's own proposals and scores merge them."""
    model = _learner()
    shaper = TopicShaper(dataclasses.replace(CONFIG, kinds=("merge",)), seed=5)
    batches = _batches(8)
    for batch in batches[:3]:
        shaper.update(model, batch)
    lazy = model.chain.lazy  # type: ignore[attr-defined]
    lazy.theta[4] = lazy.theta[3]
    lazy.total[4] = lazy.total[3]
    results = [r for batch in batches[3:] if (r := shaper.update(model, batch)) is not None]
    assert results and shaper.decisions["merge kept"] >= 1, shaper.decisions
    first = results[0]
    assert [m.kind for m in first.moves] == ["merge"] * len(first.moves)
    assert {(k, j) for j, k in first.merged.items()} & {(3, 4), (4, 3)}


QUIET = dataclasses.replace(CONFIG, start_after=100)  # no decision while the test sets up


def _warm(shaper: TopicShaper, model: StreamingLDA) -> None:
    for batch in _batches(4):
        shaper.update(model, batch)
    assert shaper.shares is not None
    shaper.shares[:LIVE] = torch.tensor([0.3, 0.3, 0.001, 0.2, 0.199], dtype=torch.float64)
    shaper.learned += QUIET.start_after


def test_proposals_find_dead_topics_duplicates_and_broad_ones() -> None:
    model = _learner()
    shaper = TopicShaper(QUIET, seed=5)
    _warm(shaper, model)
    assert proposals.propose("retire", model, shaper) == [2]
    # two topics made one: topic 4 a copy of topic 3
    lazy = model.chain.lazy  # type: ignore[attr-defined]
    lazy.theta[4] = lazy.theta[3]
    lazy.total[4] = lazy.total[3]
    assert proposals.propose("merge", model, shaper) == [(3, 4)]  # the smaller merges away
    # the broadest topics are proposed for a split, one per free slot at most
    assert shaper.shares is not None
    shaper.shares[:LIVE] = torch.tensor([0.1, 0.6, 0.1, 0.15, 0.05], dtype=torch.float64)
    shaper.config = dataclasses.replace(QUIET, births=2)
    assert proposals.propose("split", model, shaper) == [(1, None), (3, None)]


def test_a_topic_whose_words_never_meet_is_retired_as_junk() -> None:
    """Top words drawn from the four blocks (no document mixes blocks) have a negative NPMI in
    the recent documents: proposed like a dead topic; a block's own words are not."""
    model = _learner()
    shaper = TopicShaper(dataclasses.replace(QUIET, junk_npmi=0.0), seed=5)
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
    words = torch.cat([r.words for r in shaper.recent])
    lengths = torch.cat([r.lengths for r in shaper.recent])
    assert proposals.junk(model, [0, 3], words, lengths, shaper.config) == [3]


def test_a_seeded_topic_is_never_retired_or_merged_away() -> None:
    model = _learner()
    shaper = TopicShaper(QUIET, seed=5)
    _warm(shaper, model)
    lazy = model.chain.lazy  # type: ignore[attr-defined]
    lazy.theta[4] = lazy.theta[3]
    lazy.total[4] = lazy.total[3]
    model.set_seeds(SeedPrior.of([(2, 1, 1.0), (4, 35, 1.0)]))
    assert proposals.propose("retire", model, shaper) == []
    assert proposals.propose("merge", model, shaper) == [(4, 3)]  # the seeded one is kept


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


@pytest.mark.parametrize("away", [True, False])
def test_a_split_topics_number_stays_with_the_half_that_kept_its_words(away: bool) -> None:
    """Two live topics over four blocks of words: topic 0 holds two blocks, and is split
    along them with the block holding more of its top words going to the new slot when
    ``away``. Then the halves trade numbers, a relabelling only (the chain is that of the
    split without the trade, bit for bit); without ``away`` the parent keeps its slot."""
    config = LearnerConfig(SLOTS, W, sweeps=4, corpus_size=200.0, live_topics=2)
    model, plain = StreamingLDA(config, seed=1), StreamingLDA(config, seed=1)
    plain.topic_ids.trade = lambda parent, born: None  # type: ignore[method-assign]
    made = []
    for m in (model, plain):
        shaper = TopicShaper(QUIET, seed=5, clock=lambda: 1000.0, accept=lambda *_: True)
        for batch in _batches(4):
            shaper.update(m, batch)
        top = m.top_words(10)[0][0]
        blocks = torch.bincount(top // 10, minlength=4)
        most, second = torch.argsort(blocks, descending=True)[:2].tolist()
        fraction = torch.zeros(W, dtype=torch.float64)  # the first half keeps one block
        fraction[(second if away else most) * 10 : (second if away else most) * 10 + 10] = 1.0
        shaper.propose = forced({"split": [(0, fraction)]})
        shaper.config = dataclasses.replace(QUIET, start_after=shaper.learned)
        made.append([r for b in _batches(1, 1) if (r := shaper.update(m, b)) is not None])
    [reshaped] = made[0]
    [move] = reshaped.moves
    new, parent = move.topics
    ids = model.topic_ids
    free = 2  # the first free slot took the second half
    assert parent == 0 and ids.status(parent).state == "live"
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


@pytest.mark.parametrize("dead_share", [0.0, 50.0])
def test_a_split_that_would_leave_a_half_dead_is_not_made(dead_share: float) -> None:
    """Every split kept but one whose smaller half holds fewer of the window's tokens than
    the dead line: at dead line 0 splits are made; at a line no half can reach, none."""
    model = _learner()
    config = dataclasses.replace(CONFIG, dead_share=dead_share)
    every = forced({"split": [(k, None) for k in range(LIVE)]})
    shaper = TopicShaper(config, seed=5, propose=every, accept=lambda *_: True)
    for batch in _batches(4):
        shaper.update(model, batch)
    assert shaper.decisions["split scored"] == LIVE
    kept = shaper.decisions["split kept"]
    assert kept > 0 if dead_share == 0.0 else kept == 0


@pytest.mark.parametrize("shared", [3, 4, 5])
def test_a_split_is_made_only_when_its_halves_share_fewer_top_words_than_a_pair_less_a_margin(
    shared: int,
) -> None:
    """Halves sharing ``shared`` of their top 10 words: a duplicate pair shares 5, and halves
    drift together after a split, so only halves sharing under 5 - SPLIT_MARGIN are made."""
    config = ShapingConfig()
    own = config.top - shared  # each half's words of its own
    beta = torch.ones(60, dtype=torch.float64)
    fraction = torch.full((60,), 0.5, dtype=torch.float64)
    beta[:shared] = 100.0  # in both halves' top words: 50 each
    beta[10 : 10 + own] = 60.0  # the first half's
    fraction[10 : 10 + own] = 1.0
    beta[30 : 30 + own] = 60.0  # the second half's
    fraction[30 : 30 + own] = 0.0
    made = proposals.distinct(beta / beta.sum(), fraction, config)
    assert made == (shared < config.overlap - proposals.SPLIT_MARGIN)
    assert proposals.SPLIT_MARGIN >= 1
