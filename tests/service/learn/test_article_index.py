"""The kept articles' shares: a slot's row comes with the step that learns its article, a
revisit replaces it, the refolding thread's fixed point replaces both (unless the article or the
labels changed meanwhile), labels that move take the rows along (an article revisited after a
move is found under its new topic), the record's articles have rows of their own, and a
checkpoint keeps it all."""

from __future__ import annotations

import numpy as np
import torch

from lda.search import FOLD_ITERATIONS, FOLD_TOLERANCE, top_shares
from lda.tokens import WordIndex
from lda.vocab import Vocabulary
from service.api.infer.proportions import proportions, word_columns
from service.api.search.index import SearchIndex
from service.learn.entry_ref import EntryRef
from service.learn.events import LabelsMoved
from service.learn.search.index import ArticleIndex
from service.learn.search.part import Search
from service.learn.search.refold import ShareRefresh

K = 4


def ref(i: int) -> EntryRef:
    return EntryRef(f"{i}-0", f"Article {i}", str(i), "wikipedia")


def counts(*rows: list[float], length: float = 200.0) -> torch.Tensor:
    shares = torch.tensor(rows, dtype=torch.float64)
    return shares / shares.sum(1, keepdim=True) * length


def surest(index: ArticleIndex, topic: int) -> list[str]:
    search = SearchIndex(index.rows())
    return [search.rows.refs[f.row][1] for f in search.topic(topic, 10)]


def test_a_row_comes_with_the_step_that_learns_it() -> None:
    index = ArticleIndex(capacity=3, n_topics=K)
    index.placed(ref(1), 0)
    index.placed(ref(2), None)  # not kept by the reservoir
    assert index.rows().refs == []  # placed, not learned: no shares yet
    index.learned([ref(1), ref(2)], counts([0.9, 0.1, 0, 0], [0, 0, 1, 0]), docs_seen=2)
    rows = index.rows()
    assert rows.refs == [ref(1).article]
    assert rows.topics[0, 0] == 0 and rows.at.tolist() == [2]


def test_an_article_revisited_after_a_label_move_is_found_under_its_new_topic() -> None:
    index = ArticleIndex(capacity=2, n_topics=K)
    index.placed(ref(1), 0)
    index.placed(ref(2), 1)
    index.learned([ref(1), ref(2)], counts([0.9, 0.1, 0, 0], [0, 0.1, 0.9, 0]), docs_seen=2)
    assert surest(index, 0) == ["1"]
    # The drift matching: topic 3 is now what topic 0 was, topic 0 what 3 was.
    moves = Search(None, share=0.0)
    moves.now = index
    moves.handle(LabelsMoved([3, 1, 2, 0], since=5))
    assert surest(index, 3) == ["1"] and surest(index, 0) == []
    # A revisit under the new labels: the learner now gives article 1 mostly to topic 3.
    index.revisited([0], counts([0, 0.1, 0, 0.9]), docs_seen=10)
    assert surest(index, 3) == ["1"] and surest(index, 0) == []
    assert index.rows().at.tolist() == [10, 2]


def test_the_records_articles_have_rows_of_their_own_while_listed() -> None:
    index = ArticleIndex(capacity=1, n_topics=K)
    index.learned([ref(5)], counts([0, 1, 0, 0]), docs_seen=1, listed={"5"})
    assert [r[1] for r in index.rows().refs] == ["5"]
    index.learned([ref(6)], counts([0, 0, 1, 0]), docs_seen=2, listed={"6"})
    assert [r[1] for r in index.rows().refs] == ["6"]  # 5 is no longer listed


def test_a_checkpoint_keeps_the_rows() -> None:
    index = ArticleIndex(capacity=3, n_topics=K)
    for i in range(3):
        index.placed(ref(i), i)
    index.learned([ref(i) for i in range(3)], counts(*torch.eye(K)[:3].tolist()), docs_seen=3)
    index.learned([ref(9)], counts([0, 0, 0, 1]), docs_seen=4, listed={"9"})
    again = ArticleIndex(capacity=3, n_topics=K)
    again.load_state_dict(index.state_dict())
    before, after = index.rows(), again.rows()
    assert before.refs == after.refs and (before.topics == after.topics).all()
    assert (before.shares == after.shares).all() and (before.at == after.at).all()
    other_k = ArticleIndex(capacity=3, n_topics=K + 1)
    other_k.load_state_dict(index.state_dict())
    assert other_k.rows().refs == []


WORDS = ["apple", "banana", "cherry", "engine", "piston", "turbine", "violin", "cello"]


def fruit_beta() -> torch.Tensor:
    """K = 4 topics over WORDS: 0 fruit, 1 machines, 2 music, 3 a little of everything."""
    beta = torch.full((K, len(WORDS)), 0.01)
    beta[0, 0:3], beta[1, 3:6], beta[2, 6:8] = 1.0, 1.0, 1.0
    beta[3] = 0.2
    return beta / beta.sum(1, keepdim=True)


def refresh_of(index: ArticleIndex, texts: dict[int, str]) -> ShareRefresh:
    refresh = ShareRefresh(index, lambda slots: {s: texts[s] for s in slots if s in texts}, 1.0)
    refresh.model(fruit_beta(), Vocabulary(WORDS), 0.03, docs_seen=50)
    return refresh


def test_the_thread_refolds_rows_as_infer_folds_a_text() -> None:
    index = ArticleIndex(capacity=3, n_topics=K)
    texts = {0: "apple banana cherry apple engine", 1: "violin cello violin", 2: "piston"}
    for i in range(3):
        index.placed(ref(i), i)
    gibbs = counts([1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1])
    index.learned([ref(i) for i in range(3)], gibbs, docs_seen=3)
    refresh = refresh_of(index, texts)
    assert refresh.step() == 3 and refresh.step() == 0  # all due once under this model
    columns = word_columns(fruit_beta().T.contiguous().T)
    ids, starts, _ = WordIndex(WORDS).encode(list(texts.values()))
    pi = proportions(
        columns, ids, starts, 0.03, iterations=FOLD_ITERATIONS, tolerance=FOLD_TOLERANCE
    )
    topics, shares, _ = top_shares(pi, K)
    rows = index.rows()
    assert (rows.topics == topics).all() and np.allclose(rows.shares, shares)
    assert rows.at.tolist() == [50, 50, 50] and rows.tokens.tolist() == [5, 3, 1]
    assert surest(index, 2)[0] == "1" and surest(index, 0)[0] == "0"
    # A revisit's Gibbs shares do not overwrite a refolded row.
    index.revisited([1], counts([1, 0, 0, 0]), docs_seen=60)
    assert surest(index, 2)[0] == "1" and index.rows().at.tolist() == [50, 50, 50]


def test_a_refold_is_dropped_when_labels_or_the_article_changed_meanwhile() -> None:
    index = ArticleIndex(capacity=2, n_topics=K)
    for i in range(2):
        index.placed(ref(i), i)
    index.learned([ref(0), ref(1)], counts([1, 1, 1, 1], [1, 1, 1, 1]), docs_seen=2)
    due = index.due(10, docs_seen=50)
    pi = np.tile([0.7, 0.1, 0.1, 0.1], (2, 1))
    index.placed(ref(7), 1)  # slot 1 now holds another article, not yet learned
    assert index.refolded(due, pi, np.array([2, 2]), 50) == 1
    assert [r[1] for r in index.rows().refs] == ["0"]
    index.permute([1, 0, 2, 3], since=60)  # a model after the one refolded under moved labels
    assert index.refolded(due, pi, np.array([2, 2]), 50) == 0


def test_a_label_move_leaves_rows_computed_under_the_moved_model_alone() -> None:
    index = ArticleIndex(capacity=2, n_topics=K)
    index.placed(ref(0), 0)
    index.placed(ref(1), 1)
    index.learned([ref(0)], counts([1, 0, 0, 0]), docs_seen=10)  # before the evaluated model
    index.learned([ref(1)], counts([1, 0, 0, 0]), docs_seen=30)  # after it: its labels
    index.permute([1, 0, 2, 3], since=20)
    assert surest(index, 1) == ["0"] and surest(index, 0) == ["1"]


def test_a_row_with_no_text_left_waits_without_holding_up_the_others() -> None:
    index = ArticleIndex(capacity=300, n_topics=K)
    for i in range(300):
        index.placed(ref(i), i)
    index.learned([ref(i) for i in range(300)], counts(*[[1, 1, 1, 1]] * 300), docs_seen=1)
    refresh = ShareRefresh(index, lambda slots: {s: "violin" for s in slots if s >= 256}, 1.0)
    refresh.model(fruit_beta(), Vocabulary(WORDS), 0.03, docs_seen=50)
    # 256 of 300 rows have no text: each is taken once, then no longer due under this model.
    assert [refresh.step() for _ in range(3)] == [256, 44, 0] and refresh.refolded == 44


def test_due_takes_unrefolded_rows_first_then_the_stalest() -> None:
    index = ArticleIndex(capacity=4, n_topics=K)
    for i in range(4):
        index.placed(ref(i), i)
    index.learned([ref(i) for i in range(4)], counts(*[[1, 1, 1, 1]] * 4), docs_seen=5)
    due = index.due(4, docs_seen=10)
    pi = np.tile([0.25] * 4, (4, 1))
    index.refolded(due[:2], pi[:2], np.array([4, 4]), 10)  # slots of due[0], due[1]
    first = {slot for slot, _ in due[:2]}
    assert {slot for slot, _ in index.due(2, docs_seen=10)} == {0, 1, 2, 3} - first
    assert {slot for slot, _ in index.due(4, docs_seen=11)} == {0, 1, 2, 3}
