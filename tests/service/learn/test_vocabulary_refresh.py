"""A session's vocabulary follows the stream: words that come to rank among the top enter, the
learner's columns, the minibatch in hand and the held-out set follow, and a given vocabulary
never changes."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from lda.model import StreamingLDA
from lda.vocab import Vocabulary
from service.learn.session import LearningSession
from service.settings import Settings
from tests.service.learn.helpers import articles

SETTINGS = dict(
    vocab_docs=20,
    vocab_size=300,
    heldout=5,
    batch_size=7,
    eval_every=10,
    topics=5,
    vocab_refresh=35,
    vocab_counted=100_000,  # every word of these few articles, exactly
)
NEW_WORDS = ("josé", "łódź", "kraków")


def _session(**overrides: object) -> LearningSession[int]:
    settings = Settings.model_validate({**SETTINGS, **overrides})
    return LearningSession(settings.model, torch.device("cpu"))


def _learn_all(session: LearningSession[int]) -> list[int]:
    """Learn every whole minibatch in hand, refreshing when due; the vocabulary versions seen
    after each step."""
    versions = []
    while session.batch_ready:
        _, batch = session.take()
        session.learn(batch)
        if session.refresh_due():
            session.refresh()
        assert session.vocabulary is not None
        versions.append(session.vocabulary.version)
    return versions


def test_words_that_come_to_rank_enter_and_everything_follows() -> None:
    session = _session()
    texts = [a.text for a in articles(0, 120)]
    session.offer(enumerate(texts[:50]))
    assert session.vocabulary is not None and session.vocabulary.version == 0
    assert not set(NEW_WORDS) & set(session.vocabulary.words)
    _learn_all(session)
    # Later articles name places and people the first ones did not.
    later = [f"{t} José visited Łódź and Kraków." for t in texts[50:]]
    session.offer((50 + i, t) for i, t in enumerate(later[:40]))
    before = session.vocabulary
    in_hand = [
        [before.words[i] for i in ids] for _, ids in session.buffer[session.config.batch_size :]
    ]
    _, batch = session.take()
    session.learn(batch)
    assert session.model is not None and session.model.docs_seen >= 35
    session.next_refresh = 0  # due now, with the later articles counted
    assert session.refresh_due()
    keep = session.refresh()
    assert keep is not None
    vocab = session.vocabulary
    assert vocab is not None and vocab.version == before.version + 1
    assert set(NEW_WORDS) <= set(vocab.words)
    assert len(vocab) == 300 and session.model.config.n_words == 300
    # keep maps new words to old ids; the entering ones to -1.
    for j, i in enumerate(keep.tolist()):
        assert (i < 0) == (vocab.words[j] not in before.index)
        if i >= 0:
            assert before.words[i] == vocab.words[j]
    # The minibatch in hand lost only the words that left.
    assert [[vocab.words[i] for i in ids] for _, ids in session.buffer] == [
        [w for w in words if w in vocab.index]
        for words in in_hand
        if any(w in vocab.index for w in words)
    ]
    # The held-out set is its texts encoded again.
    assert session.heldout is not None
    assert session.heldout_docs == [
        vocab.encode(t) for t in session.heldout_texts if vocab.encode(t)
    ]
    assert len(session.heldout_texts) == 5
    # Learning goes on in the new words.
    session.offer((90 + i, t) for i, t in enumerate(later[40:]))
    _learn_all(session)
    perplexity, _ = session.model.evaluate(session.heldout)
    assert torch.isfinite(torch.tensor(perplexity))


def test_refreshes_come_at_multiples_of_the_setting() -> None:
    session = _session()
    texts = [a.text for a in articles(0, 120)]
    session.offer(enumerate(texts))
    versions = _learn_all(session)
    assert session.model is not None and session.vocabulary is not None
    # Refreshes happen after the steps reaching 35 and 70 documents (a step with the same
    # words keeps the version): never more than one a multiple.
    assert 1 <= versions[-1] <= session.model.docs_seen // 35
    assert session.next_refresh == (session.model.docs_seen // 35 + 1) * 35


def test_a_given_vocabulary_never_changes(tmp_path: Path) -> None:
    path = tmp_path / "vocab.txt"
    Vocabulary([a for a in "alpha beta gamma delta river city".split()]).save(path)
    session = _session(vocab=path)
    session.begin(Vocabulary.load(path))
    texts = [a.text + " river city" for a in articles(0, 80)]
    session.offer(enumerate(texts))
    assert session.word_counts is None
    assert _learn_all(session) and not session.refresh_due()
    assert session.vocabulary is not None and session.vocabulary.version == 0


def test_refreshing_off_counts_nothing() -> None:
    session = _session(vocab_refresh=0)
    session.offer(enumerate(a.text for a in articles(0, 60)))
    assert session.word_counts is None
    _learn_all(session)
    assert session.vocabulary is not None and session.vocabulary.version == 0


def test_a_held_out_set_is_never_refilled_and_follows_every_change_of_words() -> None:
    session = _session()
    texts = [a.text for a in articles(0, 60)]
    session.offer(enumerate(texts))
    vocab, model = session.vocabulary, session.model
    assert vocab is not None and model is not None and session.heldout_closed
    held = list(session.heldout_texts)
    assert len(held) == 5 and session.heldout is not None
    _learn_all(session)
    before = session.vocabulary
    assert before is not None
    saved = StreamingLDA.from_state_dict(session.model.state_dict())  # a checkpoint
    # Words that drop every word of the first held-out article.
    gone = set(before.encode(held[0]))
    words = [w for i, w in enumerate(before.words) if i not in gone]
    keep = session.refresh(words)
    assert keep is not None and session.vocabulary is not None
    assert session.heldout_texts == held  # the same texts, one now with no word
    assert session.heldout_docs == [session.vocabulary.encode(t) for t in held[1:]]
    assert session.heldout is not None and session.heldout.observed.n_documents == 4
    # Nothing more is held out: the set closed when it first filled.
    placed = session.offer((100 + i, a.text) for i, a in enumerate(articles(60, 20)))
    assert all(p.kind != "heldout" for p in placed)
    perplexity, _ = session.model.evaluate(session.heldout)
    assert math.isfinite(perplexity)
    # A restore back before the change encodes the held-out set (and what is in hand) in the
    # checkpoint's words again.
    session.begin(before, saved)
    assert session.heldout_docs == [before.encode(t) for t in held]
    assert all(max(ids) < len(before) for _, ids in session.buffer)
    assert math.isfinite(saved.evaluate(session.heldout)[0])


def test_counts_begun_late_wait_for_a_whole_interval_before_choosing() -> None:
    # A resume from a checkpoint without counts: its learner passes a multiple of the
    # interval soon, but a handful of counted documents must not choose 300 words.
    session = _session()
    session.offer(enumerate(a.text for a in articles(0, 60)))
    _learn_all(session)
    assert session.model is not None and session.vocabulary is not None
    resumed = _session()
    resumed.begin(session.vocabulary, StreamingLDA.from_state_dict(session.model.state_dict()))
    resumed.restore_heldout(session.heldout_texts)  # as the worker reads it back
    version = session.vocabulary.version
    resumed.offer((100 + i, a.text) for i, a in enumerate(articles(60, 21)))
    assert resumed.word_counts is not None and resumed.word_counts.documents == 21
    assert set(_learn_all(resumed)) == {version}  # past a multiple, but 21 counted
    assert resumed.model is not None and resumed.model.docs_seen >= resumed.next_refresh
    resumed.offer((200 + i, a.text) for i, a in enumerate(articles(81, 21)))
    assert _learn_all(resumed)[-1] == version + 1  # a whole interval counted: it chooses
