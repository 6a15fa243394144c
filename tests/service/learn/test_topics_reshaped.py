"""Topics born, merged or retired are one event: each worker part that holds something per topic
(the record's articles and sizes, the search rows, the seeds) follows it, slot by slot, and what
it holds after survives its checkpoint. One reshape for all: slot 1 merged into slot 0, slot 2
retired, slot 5 born into (number 4: a newborn's number is not its slot); slot 4 stays free."""

from __future__ import annotations

import logging
from unittest import mock

import numpy as np
import pytest
import torch

from lda.model import LearnerConfig, StreamingLDA
from lda.topic_ids import FREE, TopicIds
from lda.vocab import Vocabulary
from service.learn.entry_ref import EntryRef
from service.learn.events import (
    ArticlesListed,
    BatchLearned,
    LabelsMoved,
    LearnerBegun,
    SeedsChanged,
    TopicsReshaped,
)
from service.learn.scoring_process import by_number, pinned_drift
from service.learn.search.index import ArticleIndex
from service.learn.search.part import Search
from service.learn.seeds import Seeds
from service.learn.topic_record import Record, RecordConfig
from service.learn.topic_reshape import DROPPED, destinations
from service.store.topic_seeds import TopicSeeds

K = 6  # slots: numbers 0-3 live in slots 0-3, slots 4 and 5 free
WORDS = ["actor", "film", "kraków", "opera", "piston"]


def reshaped_ids() -> tuple[TopicIds, TopicsReshaped]:
    """The topics' numbers after the reshape, and its event as the worker announces it."""
    ids = TopicIds.start(K, 4)
    ids.merged(0, 1, docs=10, time=0.0)
    ids.retired(2, docs=10, time=0.0)
    assert ids.born(5, docs=10, time=0.0) == 4
    event = TopicsReshaped(tuple(ids.moves), freed=(1, 2), merged={1: 0}, born=(5,))
    return ids, event


def learner() -> StreamingLDA:
    model = StreamingLDA(LearnerConfig(n_topics=K, n_words=len(WORDS), corpus_size=1e6))
    model.topic_ids = reshaped_ids()[0]
    return model


def ref(i: int) -> EntryRef:
    return EntryRef(f"{i}-0", f"Article {i}", str(i), "wikipedia")


def counts(*rows: list[float], length: float = 100.0) -> torch.Tensor:
    """Documents' E[n_dk] of the given topic shares (over the K slots), ``length`` tokens each."""
    shares = torch.tensor(rows, dtype=torch.float64)
    return shares / shares.sum(1, keepdim=True) * length


# Five articles: "0" about topic 0, "1" about 1, "2" half 0 half 1 (listed by both), "3" about
# the retired topic 2, "4" about slot 5 (learned before that slot was freed: stale).
SHARES = [
    [0.9, 0.05, 0.05, 0, 0, 0],
    [0.02, 0.95, 0, 0.03, 0, 0],
    [0.5, 0.5, 0, 0, 0, 0],
    [0, 0, 0.8, 0.2, 0, 0],
    [0, 0, 0, 0.3, 0, 0.7],
]


def test_destinations_follow_merges_and_drop_the_freed_and_the_born() -> None:
    _, event = reshaped_ids()
    assert destinations(event, K).tolist() == [0, 0, DROPPED, 3, 4, DROPPED]
    chained = TopicsReshaped((), freed=(1, 2), merged={1: 2, 2: 0}, born=())
    assert destinations(chained, 3).tolist() == [0, 0, 0]  # 1 went into 2, then 2 into 0
    with pytest.raises(ValueError, match="outside the 3 slots"):
        destinations(TopicsReshaped((), freed=(7,), merged={}, born=()), 3)


RECORD = RecordConfig(topic_articles=2, topic_half_life=10**9, export_docs=10, seed=0)


def recorded() -> tuple[Record, StreamingLDA, Vocabulary]:
    """A record that learned the five articles of ``SHARES`` (its learner and words too)."""
    record, model, vocab = Record(RECORD), learner(), Vocabulary(WORDS)
    record.handle(LearnerBegun(model, vocab, {}))
    words = torch.tensor([0, 1, 2, 3, 4])
    record.handle(BatchLearned(words, counts(*SHARES), [ref(i) for i in range(5)], 5))
    return record, model, vocab


def test_a_split_parents_holdings_go_with_its_number_to_its_halfs_slot() -> None:
    """The halves of a split traded numbers: the parent's slot holds the new number (born, from
    nothing), the parent's holdings go to the slot its number went to."""
    traded = TopicsReshaped((), freed=(), merged={}, born=(3,), moved={3: 4})
    assert destinations(traded, K).tolist() == [0, 1, 2, 4, 4, 5]
    into_a_freed = TopicsReshaped((), freed=(4,), merged={}, born=(3,), moved={3: 4})
    assert destinations(into_a_freed, K).tolist() == [0, 1, 2, DROPPED, DROPPED, 5]
    record = recorded()[0]
    now = record.now
    assert now is not None
    before, tokens = now.article_rows(5), now.tally.topic_tokens.copy()
    record.handle(traded)
    rows = now.article_rows(5)
    assert rows[3] == [] and {r[1] for r in rows[4]} == {r[1] for r in before[3]}
    assert now.tally.topic_tokens[4] == pytest.approx(tokens[3] + tokens[4])
    assert now.tally.topic_tokens[3] == 0


def test_the_record_merges_sizes_and_articles_and_empties_the_freed_and_the_born() -> None:
    record, model, vocab = recorded()
    now = record.now
    assert now is not None
    before = now.article_rows(5)
    assert [r[1] for r in before[0]] == ["0", "2"] and [r[1] for r in before[1]] == ["1", "2"]
    assert before[5] and before[2]
    tokens = now.tally.topic_tokens.copy()
    doc_topic = now.tally.doc_topic.copy()

    answers = record.handle(reshaped_ids()[1])

    rows = now.article_rows(5)
    # Kept topic 0: "2" is half of each, so all of the merged topic; then "1" (0.95) beats
    # "0" (0.9) for the last place.
    assert [r[1] for r in rows[0]] == ["2", "1"]
    assert rows[0][0][3] == pytest.approx(1.0) and rows[0][1][3] == pytest.approx(0.95)
    assert rows[1] == rows[2] == rows[5] == []  # merged away, retired, born
    assert rows[3] == before[3] and rows[4] == before[4]  # untouched (4: free all along)
    assert now.tally.topic_tokens[0] == pytest.approx(tokens[0] + tokens[1])
    assert now.tally.topic_tokens[[1, 2, 5]].tolist() == [0, 0, 0]
    assert now.tally.topic_tokens[3] == tokens[3]
    assert np.allclose(now.tally.doc_topic[:, 0], doc_topic[:, 0] + doc_topic[:, 1])
    assert not now.tally.doc_topic[:, [1, 2, 5]].any()
    sizes = record.sizes()
    assert sizes is not None and sum(sizes) == pytest.approx(1.0) and sizes[1] == 0
    # The ids listed now go to search at once; the dropped articles are no longer held.
    listed = {a[1] for t in rows for a in t}
    assert answers == (ArticlesListed(frozenset(listed)),)
    assert {a[1] for a in now.articles.articles.values()} == listed

    again = Record(RECORD)
    again.handle(LearnerBegun(model, vocab, {"topics": record.state_dict()}))
    assert again.now is not None
    assert again.now.article_rows(5) == rows and again.sizes() == sizes
    assert np.array_equal(again.now.tally.doc_topic, now.tally.doc_topic)


def test_search_rows_add_a_merged_topics_share_and_drop_the_freed_and_the_born() -> None:
    search = Search(None, share=0.0)
    search.handle(LearnerBegun(learner(), Vocabulary(WORDS), {}))
    index = search.now = ArticleIndex(capacity=4, n_topics=K)
    for i in range(4):
        index.placed(ref(i), i)
    index.learned([ref(i) for i in range(5)], counts(*SHARES), docs_seen=5, listed={"4"})
    # Refolded under the model of 10 documents: the one the moves were made on.
    index.refolded([(0, ref(0).article)], np.array([SHARES[0]]), np.array([100.0]), 10)

    search.handle(reshaped_ids()[1])

    rows = index.rows()
    shares = {
        r[1]: {int(t): round(float(s), 4) for t, s in zip(topics, part, strict=True) if t >= 0}
        for r, topics, part in zip(rows.refs, rows.topics, rows.shares, strict=True)
    }
    assert shares == {
        "0": {0: 0.95},  # 0.9 + 0.05 merged, 0.05 of the retired topic gone
        "1": {0: 0.97, 3: 0.03},
        "2": {0: 1.0},
        "3": {3: 0.2},
        "4": {3: 0.3},  # the stale share of the slot born into is gone
    }
    assert (np.diff(rows.shares, axis=1) <= 0).all()  # still largest first
    assert rows.at.tolist() == [10, 5, 5, 5, 5]  # when they were computed: unchanged
    # A refold under the model the moves were made on comes too late: dropped.
    assert index.refolded([(1, ref(1).article)], np.array([SHARES[1]]), np.array([9.0]), 10) == 0

    again = ArticleIndex(capacity=4, n_topics=K)
    again.load_state_dict(index.state_dict())
    kept = again.rows()
    assert kept.refs == rows.refs and (kept.topics == rows.topics).all()
    assert (kept.shares == rows.shares).all() and again.moved_at == index.moved_at == 11


def seeds_of(model: StreamingLDA, topics: dict[int, TopicSeeds], shaper: bool) -> Seeds:
    """The seeds part over a session that holds ``model`` (topics that move: ``shaper``)."""
    session = mock.Mock(model=model, vocabulary=Vocabulary(WORDS), shaper=None)
    if shaper:
        session.shaper = object()
    seeds = Seeds(session, mock.Mock(), mock.Mock(side_effect=lambda _what, call: call()), {})
    seeds.topics = dict(topics)
    return seeds


def prior_slots(model: StreamingLDA) -> dict[int, set[int]]:
    """The prior's seed words (ids) by slot."""
    slots: dict[int, set[int]] = {}
    for k, word, _ in model.seeds.triples():
        slots.setdefault(k, set()).add(word)
    return slots


def test_seeds_go_to_the_slot_of_their_number_and_a_gone_or_unknown_number_is_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = learner()
    film, opera, krakow = (TopicSeeds((w,), 5.0) for w in ("film", "opera", "kraków"))
    # 0 and 3 live where they were, 4 was born into slot 5, 1 merged away, 9 never given.
    topics = {0: film, 3: opera, 4: krakow, 1: film, 9: opera}
    seeds = seeds_of(model, topics, shaper=True)
    with caplog.at_level(logging.WARNING, logger="service.learn.seeds"):
        assert seeds.follow()
    assert prior_slots(model) == {0: {1}, 3: {3}, 5: {2}}
    assert seeds.refused == {1, 9} and seeds.refusals == 2
    assert sum("refused" in r.message for r in caplog.records) == 2
    assert seeds.pinned() == [0, 3, 5]
    shown = seeds.shown(model)
    assert shown["topic_seeds"] == [["film"], [], [], ["opera"], [], ["kraków"]]
    assert shown["counters"] == {"seeds_refused": 2}
    assert not seeds.follow() and seeds.refusals == 2  # refused once, not at every look
    assert seeds.topics == topics  # the operator's seeds are all kept

    # A reshape that gives number 9 life (born into slot 4): its seeds take effect.
    ids = model.topic_ids
    ids.next_id = 9
    assert ids.born(4, docs=20, time=0.0) == 9
    born = TopicsReshaped((ids.moves[-1],), born=(4,), freed=(), merged={})
    assert list(seeds.handle(born)) == [SeedsChanged(prior=True, show=False)]
    assert prior_slots(model) == {0: {1}, 3: {3}, 4: {3}, 5: {2}}
    assert seeds.refused == {1} and seeds.pinned() == [0, 3, 4, 5]


def test_while_topics_move_seeds_keep_their_numbers_when_labels_move() -> None:
    model = learner()
    seeds = seeds_of(model, {3: TopicSeeds(("opera",), 5.0)}, shaper=True)
    seeds.follow()
    matched = [0, 1, 2, 5, 4, 3]  # slot 3's topic (number 3) is now in slot 5, 5's in 3
    # (the worker pins every slot while topics move, so its matching moves no label; this is
    # the contract should one move: the numbers go with their topics first)
    model.topic_ids.follow(matched)
    with mock.patch("service.learn.seeds.replace_topic_seeds") as written:
        answers = list(seeds.handle(LabelsMoved(matched, since=30)))
    assert answers == [SeedsChanged(prior=True, show=False)] and not written.called
    assert seeds.topics == {3: TopicSeeds(("opera",), 5.0)}  # number 3's, still
    assert prior_slots(model) == {5: {3}} and seeds.pinned() == [5]


def test_while_k_is_fixed_seeds_are_by_slot_as_they_always_were() -> None:
    model = StreamingLDA(LearnerConfig(n_topics=4, n_words=len(WORDS), corpus_size=1e6))
    seeds = seeds_of(model, {2: TopicSeeds(("film",), 5.0), 7: TopicSeeds(("opera",), 5.0)}, False)
    assert seeds.follow()
    assert prior_slots(model) == {2: {1}} and seeds.pinned() == [2, 7]
    assert seeds.refusals == 0  # a number past K waits, as before
    with mock.patch("service.learn.seeds.replace_topic_seeds", return_value=3):
        answers = list(seeds.handle(LabelsMoved([2, 1, 0, 3], since=10)))
    assert answers == [SeedsChanged(prior=True, show=False)]
    assert set(seeds.topics) == {0} and prior_slots(model) == {0: {1}}


def test_a_traded_numbers_drift_is_from_its_own_last_row() -> None:
    """Number 1 split, its number going to slot 2 (free before): its drift is measured from
    its own row of the last evaluation, not from the free slot's prior draw."""
    previous = torch.rand((4, 6), generator=torch.Generator().manual_seed(1))
    previous /= previous.sum(1, keepdim=True)
    before, now = (0, 1, FREE, 2), (0, 7, 1, 2)
    reference = by_number(previous, before, now)
    assert reference is not None
    assert torch.equal(reference, previous[[0, 1, 1, 3]])
    current = previous[[0, 2, 1, 3]]  # 1's words now in slot 2
    drift = pinned_drift(reference, current, range(4)).divergence
    assert float(drift[2]) == 0.0 and float(drift[1]) > 0.0
    assert by_number(previous, before, before) is previous
    assert by_number(previous, None, now) is previous
