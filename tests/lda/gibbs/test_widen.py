"""widen: sweeps over the live topics read as sweeps over every slot, in the kernel's layout."""

import torch

from lda.batch import Batch
from lda.gibbs.result import GibbsExpectations, widen

ROWS = torch.tensor([0, 2, 5])
FREE = torch.tensor([1, 3, 4])
BATCH = Batch.from_ids([[0, 1, 2], [2, 3]])


def _reduced(word_major: bool) -> GibbsExpectations:
    g = torch.Generator().manual_seed(0)
    words = torch.rand(4, 3, generator=g, dtype=torch.float64)  # (W_b, L) as the kernel keeps it
    return GibbsExpectations(
        summed=None,
        kept=2,
        dtype=torch.float64,
        batch=BATCH,
        topic_word_sums=words.T if word_major else words.T.contiguous(),
        document_topic_sums=torch.rand(2, 3, generator=g, dtype=torch.float64),
        topic_words=torch.arange(4),
    )


def test_free_slots_get_no_tokens_and_live_rows_keep_theirs() -> None:
    result = _reduced(word_major=True)
    wide = widen(result, ROWS, 6, 4)
    assert torch.equal(wide.topic_word(4)[ROWS], result.topic_word(4))
    assert torch.equal(wide.document_topic()[:, ROWS], result.document_topic())
    assert not wide.topic_word(4)[FREE].any() and not wide.document_topic()[:, FREE].any()


def test_word_major_sums_stay_word_major() -> None:
    """The step reads the sums word-major: a widened result must not need a copy to get there."""
    wide = widen(_reduced(word_major=True), ROWS, 6, 4)
    assert wide.topic_word_sums is not None and wide.topic_word_sums.T.is_contiguous()
    rows_major = widen(_reduced(word_major=False), ROWS, 6, 4)
    assert rows_major.topic_word_sums is not None
    assert torch.equal(rows_major.topic_word_sums, wide.topic_word_sums)


def test_per_token_sums_widen_as_the_whole_per_token_matrix_would() -> None:
    """The dense kernel's (T, L) counts: reduced before widening, the same sums as widening the
    (T, K) counts themselves, bit for bit."""
    g = torch.Generator().manual_seed(1)
    summed = torch.randint(0, 4, (5, 3), generator=g).to(torch.uint16)
    result = GibbsExpectations(summed=summed, kept=3, dtype=torch.float64, batch=BATCH)
    whole = torch.zeros(5, 6, dtype=torch.int32)
    whole[:, ROWS] = summed.to(torch.int32)
    whole = whole.to(torch.uint16)
    expected = GibbsExpectations(summed=whole, kept=3, dtype=torch.float64, batch=BATCH)
    wide = widen(result, ROWS, 6, 4)
    assert wide.summed is None
    assert torch.equal(wide.topic_word(4), expected.topic_word(4))
    sums, kept = wide.topic_word_kept_sums(4)
    assert torch.equal(sums / kept, expected.topic_word(4))
    assert torch.equal(wide.document_topic(), expected.document_topic())
