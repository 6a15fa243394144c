"""The learning session: the protocol train, the worker and the benchmark share."""

from __future__ import annotations

import torch

from lda.batch import Batch
from lda.model import StreamingLDA
from lda.vocab import build_vocabulary
from service.learn.session import LearningSession
from service.settings import Settings
from tests.service.learn.helpers import articles

SETTINGS = dict(vocab_docs=20, vocab_size=300, heldout=5, batch_size=7, eval_every=10, topics=5)


def _texts(count: int) -> list[str]:
    texts = [a.text for a in articles(0, count)]
    texts.insert(22, "zzzz qqqq")  # no vocabulary word: empty, never held out or trained
    return texts


def test_vocabulary_from_the_first_documents_then_held_out_then_minibatches():
    settings = Settings(**SETTINGS)
    session: LearningSession[int] = LearningSession(settings.model, torch.device("cpu"))
    texts = _texts(60)
    assert session.wanted == 20
    assert session.offer((i, t) for i, t in enumerate(texts[:19])) == []  # held for the vocabulary
    assert session.model is None and session.wanted == 1
    placed = session.offer([(19, texts[19])])
    assert session.vocabulary is not None and session.model is not None
    assert session.vocabulary.words == build_vocabulary(texts[:20], 300).words
    placed += session.offer((i, t) for i, t in enumerate(texts) if i >= 20)
    kinds = {p.item: p.kind for p in placed}
    assert [p.item for p in placed] == list(range(len(texts)))  # each placed once, in order
    encoded = [session.vocabulary.encode(t) for t in texts]
    non_empty = [i for i, ids in enumerate(encoded) if ids]
    assert kinds[22] == "empty" and [i for i in kinds if kinds[i] == "empty"] == [
        i for i, ids in enumerate(encoded) if not ids
    ]
    assert [i for i in kinds if kinds[i] == "heldout"] == non_empty[:5]
    assert [item for item, _ in session.buffer] == non_empty[5:]
    assert session.heldout is not None and session.heldout_docs == [
        encoded[i] for i in non_empty[:5]
    ]


def test_training_through_the_session_is_the_learner_on_the_same_minibatches():
    settings = Settings(**SETTINGS)
    session: LearningSession[int] = LearningSession(settings.model, torch.device("cpu"))
    texts = _texts(60)
    session.offer(enumerate(texts))
    assert session.vocabulary is not None
    documents = [ids for _, ids in session.buffer]
    evaluations = []
    while session.batch_ready:
        _, batch = session.take()
        session.learn(batch)
        if session.evaluation_due():
            assert session.model is not None
            evaluations.append(session.model.docs_seen)
    oracle = StreamingLDA(
        settings.model.learner_config(len(session.vocabulary)),
        "cpu",
        settings.model.seed,
    )
    whole = len(documents) // 7 * 7
    for start in range(0, whole, 7):
        oracle.update(Batch.from_ids(documents[start : start + 7]))
    assert session.model is not None and session.model.docs_seen == whole
    assert torch.equal(session.model.state.theta, oracle.state.theta)
    assert len(session.buffer) == len(documents) - whole
    # one evaluation per multiple of 10 reached: 14 -> 10, 21 -> 20, 28, 35 -> 30, 42 -> 40 ...
    assert evaluations == [d for d in range(7, whole + 1, 7) if d // 10 > (d - 7) // 10]
    assert session.rates()[0] > 0


def test_several_multiples_in_one_step_are_one_evaluation():
    settings = Settings(**{**SETTINGS, "batch_size": 25, "eval_every": 10})
    session: LearningSession[int] = LearningSession(settings.model, torch.device("cpu"))
    session.offer(enumerate(_texts(60)))
    session.learn(session.take()[1])  # 25 documents: past 10 and 20
    assert session.evaluation_due() and not session.evaluation_due()
    assert session.next_eval == 30


def test_a_short_source_builds_its_vocabulary_when_flushed():
    settings = Settings(**{**SETTINGS, "vocab_docs": 100})
    session: LearningSession[int] = LearningSession(settings.model, torch.device("cpu"))
    assert session.offer(enumerate(_texts(30))) == []
    placed = session.flush()
    assert session.model is not None and len(placed) == 31
    assert session.flush() == []


def test_a_rank_that_does_not_hold_out_trains_every_document():
    settings = Settings(**SETTINGS)
    session: LearningSession[int] = LearningSession(
        settings.model, torch.device("cpu"), holds_out=False
    )
    vocabulary = build_vocabulary(_texts(20), 300)
    session.begin(vocabulary)
    placed = session.offer(enumerate(_texts(30)))
    assert {p.kind for p in placed} == {"empty", "train"} and session.heldout is None


def test_a_resumed_session_reads_its_held_out_set_back_and_evaluates_at_the_next_multiple():
    settings = Settings(**SETTINGS)
    first: LearningSession[int] = LearningSession(settings.model, torch.device("cpu"))
    first.offer(enumerate(_texts(60)))
    assert first.model is not None and first.vocabulary is not None
    while first.batch_ready:
        first.learn(first.take()[1])
    resumed: LearningSession[int] = LearningSession(settings.model, torch.device("cpu"))
    resumed.begin(first.vocabulary, first.model)
    resumed.restore_heldout(_texts(60))  # the texts in arrival order (held-out ones first)
    assert resumed.heldout_docs == first.heldout_docs and resumed.heldout is not None
    assert resumed.next_eval == (first.model.docs_seen // 10 + 1) * 10


def test_a_held_out_set_stored_by_an_earlier_run_comes_first():
    """No checkpoint but a stored held-out set (the data directory was wiped): once the
    vocabulary exists its texts are the held-out set's first documents, then placement goes on,
    so a restart that reads the store back finds the same set."""
    settings = Settings(**SETTINGS)
    stored = [a.text for a in articles(100, 3)]
    session: LearningSession[int] = LearningSession(settings.model, torch.device("cpu"))
    session.stored_heldout = stored
    placed = session.offer(enumerate(_texts(60)))
    assert session.vocabulary is not None
    held = [p.item for p in placed if p.kind == "heldout"]
    assert len(held) == 2  # 3 stored + 2 new = heldout 5
    encoded = [session.vocabulary.encode(t) for t in stored]
    assert session.heldout_docs[:3] == [ids for ids in encoded if ids]
    resumed: LearningSession[int] = LearningSession(settings.model, torch.device("cpu"))
    resumed.begin(session.vocabulary)
    texts = _texts(60)
    resumed.restore_heldout(stored + [texts[i] for i in held])  # the store after this run
    assert resumed.heldout_docs == session.heldout_docs


def test_a_resumed_model_keeps_its_learner_and_says_where_the_settings_differ(caplog):
    """A checkpoint's learner stands (its chain is only valid under it), but a resume that the
    current settings would configure otherwise (here a larger minibatch: SGRLD's step and mean
    decay follow it) is logged as a warning naming the differences; a matching one is not."""
    vocabulary = build_vocabulary([a.text for a in articles(0, 20)], 300)
    old = Settings(**SETTINGS, sampler="sgrld")
    model = StreamingLDA(old.model.learner_config(len(vocabulary)), seed=0)
    model.update(Batch.from_ids([vocabulary.encode(a.text) for a in articles(20, 27)]))
    caplog.set_level("INFO", logger="service.learn.session")
    same: LearningSession[int] = LearningSession(old.model, torch.device("cpu"))
    assert same.begin(vocabulary, model) is model
    assert "from the checkpoint" in caplog.text and "WARNING" not in caplog.text
    caplog.clear()
    larger: LearningSession[int] = LearningSession(
        Settings(**{**SETTINGS, "batch_size": 1000}).model, torch.device("cpu")
    )
    assert larger.begin(vocabulary, model) is model and model.config.mean_decay == 0.97
    (warning,) = [r for r in caplog.records if r.levelname == "WARNING"]
    assert "mean_decay 0.97 (settings: 0.951" in warning.getMessage()  # 0.995^10: SCIR's
    assert "schedule" in warning.getMessage()
