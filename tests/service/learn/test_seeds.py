"""Seeded topics in the worker: a seeded topic keeps its number through the drift matching,
its seeds follow it and stay in the checkpoint, and a pending seed word takes effect when a
vocabulary refresh brings it in."""

from __future__ import annotations

import json
from unittest import mock

import pytest
import torch

from lda.batch import Batch
from lda.config import SEED_TOKENS_PER_DOCUMENT
from lda.evaluation.drift import topic_drift
from lda.model import LearnerConfig, StreamingLDA
from lda.vocab import Vocabulary
from service.learn.scoring_process import pinned_drift
from service.learn.seeds import Seeds, SeedsError, seed_prior, tokenised
from service.store.topic_seeds import TopicSeeds


def _seeds(topics: dict[int, TopicSeeds]) -> Seeds:
    seeds = Seeds(mock.Mock(), mock.Mock(), mock.Mock(side_effect=lambda _what, call: call()), {})
    seeds.topics = dict(topics)
    return seeds


def test_a_seeded_topic_keeps_its_number_across_evaluations_that_move_other_labels() -> None:
    generator = torch.Generator().manual_seed(3)
    k, w = 8, 40
    previous = torch.rand((k, w), generator=generator) ** 8
    previous /= previous.sum(1, keepdim=True)
    seeds = _seeds({0: TopicSeeds(("film",), 10.0)})
    moved_others = 0
    for _ in range(10):
        order = torch.randperm(k, generator=generator)  # the chain's labels switch, 0's too
        current = previous[order]
        free = topic_drift(previous, current).matched
        assert free.tolist() == order.tolist()  # unpinned, label 0 would move
        matched = pinned_drift(previous, current, seeds.pinned()).matched.tolist()
        assert matched[0] == 0 and sorted(matched) == list(range(k))
        moved_others += any(m != i for i, m in enumerate(matched))
        assert not seeds.move(matched)  # pinned: the seeds stay on topic 0
        assert seeds.topics == {0: TopicSeeds(("film",), 10.0)}
        previous = current
    assert moved_others == 10


def test_seeds_move_with_their_label_as_names_do() -> None:
    seeds = _seeds({1: TopicSeeds(("film",), 10.0)})
    with mock.patch("service.learn.seeds.replace_topic_seeds", return_value=7) as written:
        assert seeds.move([1, 0, 2])
    assert seeds.topics == {0: TopicSeeds(("film",), 10.0)} and seeds.seq == 7
    assert written.call_args.args[1] == seeds.topics


def test_a_seeds_files_words_and_strength_are_checked_as_the_apis_are() -> None:
    with pytest.raises(SeedsError, match="600 characters: the most is 100"):
        tokenised({1: ["\u3316" * 100]}, 5.0)  # 100 characters, far more once normalised
    with pytest.raises(SeedsError, match="topic 1"):
        tokenised({1: ["film"]}, 1e-320)  # would round the pseudo-counts to nothing


def test_the_prior_holds_the_words_in_the_vocabulary_and_waits_for_the_others() -> None:
    given = tokenised({2: ["Film", "Kraków"], 9: ["film"]}, 5.0)
    assert given[2] == TopicSeeds(("film", "kraków"), 5.0)
    model = StreamingLDA(LearnerConfig(n_topics=4, n_words=3, sampler="scir", corpus_size=1e6))
    # Before any document: strength 5 is 5% of an average topic's N L / K tokens, L assumed.
    s = 5.0 * 1e6 * SEED_TOKENS_PER_DOCUMENT / (100 * 4)
    prior = seed_prior(given, Vocabulary(["actor", "film"]), model)
    assert prior.triples() == [(2, 1, pytest.approx(s))]  # kraków pending; 9 is not a topic
    later = seed_prior(given, Vocabulary(["actor", "film", "kraków"]), model)
    assert later.triples() == [(2, 1, pytest.approx(s)), (2, 2, pytest.approx(s))]
    model.update(Batch.from_ids([[0, 1, 1, 2], [2, 2]]))  # L is then measured: 3 tokens
    measured = seed_prior(given, Vocabulary(["actor", "film", "kraków"]), model)
    assert measured.triples()[0][2] == pytest.approx(5.0 * 1e6 * 3 / (100 * 4))


def test_the_checkpoint_keeps_the_seeds() -> None:
    seeds = _seeds({3: TopicSeeds(("film", "actor"), 2.5)})
    seeds.seq = 4
    state = json.loads(json.dumps(seeds.state_dict()))
    again = _seeds({})
    again.load_state_dict(state)
    assert again.topics == seeds.topics and again.seq == 4
    again.load_state_dict(None)  # a checkpoint from before seeds keeps what there is
    assert again.topics == seeds.topics
