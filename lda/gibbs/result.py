"""What a Gibbs call hands back: the kept sweeps' sums, per token or already reduced by word and
by document, and the expectations read from them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from lda.batch import Batch


@dataclass(frozen=True)
class GibbsExpectations:
    """Expected topic indicators of each token, averaged over the kept sweeps. The CUDA and
    sparse kernels keep no per-token sums (``summed`` is None): they hand over the sums already
    reduced by word and by document."""

    summed: torch.Tensor | None  # (T, K) kept-sweep indicator counts (or conditionals), any dtype
    kept: int  # sweeps summed
    dtype: torch.dtype  # of the expectations handed out
    batch: Batch
    topic_word_sums: torch.Tensor | None = None  # (K, W) or (K, W_b) float64 kept-sweep sums
    document_topic_sums: torch.Tensor | None = None  # (n, K) float64, kept-sweep sums
    # (W_b,) the word of each column of topic_word_sums (sparse kernel: the minibatch's distinct
    # words); None: the columns are all W words (CUDA kernel)
    topic_words: torch.Tensor | None = None

    @property
    def token_topics(self) -> torch.Tensor:
        """(T, K) E[1{z_j = k}]; rows sum to 1."""
        if self.summed is None:
            raise ValueError(
                "the CUDA and sparse Gibbs kernels reduce by word and document: this result "
                "keeps no per-token expectations; use document_topic() / topic_word(), or "
                "backend='cpu' with kernel='dense'"
            )
        return (self.summed.to(torch.float64) / self.kept).to(self.dtype)

    def document_topic(self) -> torch.Tensor:
        """(n, K) E[n_dk]: expected tokens of each topic in each document."""
        if self.document_topic_sums is not None:
            return (self.document_topic_sums / self.kept).to(self.dtype)
        if self.summed is None:
            raise ValueError("document_topic was not accumulated (need_document_topic=False)")
        if self.summed.device.type == "cpu":
            # One pass over the raw counts, as topic_word: no (T, K) float copy, which would
            # cost the held-out scorer's large chunks much of a short score.
            from lda.gibbs.dense import add_by_document

            out64 = torch.zeros(self.batch.n_documents, self.summed.shape[1], dtype=torch.float64)
            add_by_document(
                self.batch.offsets.numpy(), self.summed.numpy(), self.kept, out64.numpy()
            )
            return out64.to(self.dtype)
        token_topics = self.token_topics
        n, k = self.batch.n_documents, token_topics.shape[1]
        out = torch.zeros(n, k, dtype=token_topics.dtype, device=token_topics.device)
        return out.index_add_(0, self.batch.document_index(), token_topics)

    def topic_word_kept_sums(self, n_words: int) -> tuple[torch.Tensor, int]:
        """(the K x n_words sum over documents of E[n_dkw], times d; d): d = the kept sweeps
        when the sparse kernel's sums cover every column as they are (the caller divides, e.g.
        folded into a step's scale: no pass over K x W_b to divide), else 1."""
        if self.topic_word_sums is not None and self._every_column(n_words):
            return self.topic_word_sums, self.kept
        return self.topic_word(n_words), 1

    def _every_column(self, n_words: int) -> bool:
        """Whether the sparse kernel's word sums are the n_words columns themselves (a caller
        that renumbered the minibatch's words, as the lazy SCIR chain does): no scatter."""
        return self.topic_words is not None and self.topic_words.numel() == n_words

    def topic_word(self, n_words: int) -> torch.Tensor:
        """(K, W) sum over documents of E[n_dkw]."""
        if self.summed is None:
            sums = self.topic_word_sums
            if sums is None:
                raise ValueError("topic_word was not accumulated (need_topic_word=False)")
            if self._every_column(n_words):  # in the kernel's word-major layout
                return (sums / self.kept).to(self.dtype)
            if self.topic_words is not None:
                from lda.gibbs.sparse import scatter_topic_word

                return scatter_topic_word(
                    self.topic_words, sums, 1.0 / self.kept, n_words, self.dtype
                )
            if sums.shape[1] != n_words:
                raise ValueError(f"topic_word has {sums.shape[1]} words, asked for {n_words}")
            return (sums / self.kept).to(self.dtype)
        if self.summed.device.type == "cpu":
            # One pass over the raw counts, much cheaper than a (T, K) float conversion,
            # division and index_add. Same sums, same order.
            from lda.gibbs.dense import add_by_word

            k = self.summed.shape[1]
            out = torch.zeros(k, n_words, dtype=torch.float64)
            add_by_word(self.batch.words.numpy(), self.summed.numpy(), self.kept, out.numpy())
            return out.to(self.dtype)
        token_topics = self.token_topics
        k = token_topics.shape[1]
        out = torch.zeros(n_words, k, dtype=token_topics.dtype, device=token_topics.device)
        return out.index_add_(0, self.batch.words, token_topics).T.contiguous()

    def reduced(self, n_words: int) -> GibbsExpectations:
        """The same expectations with no per-token sums: float64 sums by word ((K, n_words))
        and by document, already divided by the kept sweeps (``kept`` 1)."""
        if self.summed is None:
            return self
        k = self.summed.shape[1]
        if self.summed.device.type == "cpu":
            from lda.gibbs.dense import add_by_document, add_by_word

            words = torch.zeros(k, n_words, dtype=torch.float64)
            add_by_word(self.batch.words.numpy(), self.summed.numpy(), self.kept, words.numpy())
            documents = torch.zeros(self.batch.n_documents, k, dtype=torch.float64)
            add_by_document(
                self.batch.offsets.numpy(), self.summed.numpy(), self.kept, documents.numpy()
            )
        else:
            token_topics = self.summed.to(torch.float64) / self.kept
            words = torch.zeros(n_words, k, dtype=torch.float64, device=token_topics.device)
            words = words.index_add_(0, self.batch.words, token_topics).T
            documents = torch.zeros(
                self.batch.n_documents, k, dtype=torch.float64, device=token_topics.device
            ).index_add_(0, self.batch.document_index(), token_topics)
        return dataclasses.replace(
            self, summed=None, kept=1, topic_word_sums=words, document_topic_sums=documents,
            topic_words=None,
        )  # fmt: skip

    def topic_word_compact(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(W_b,) the minibatch's distinct word ids, ascending, and (K, W_b) the sum over
        documents of E[n_dkw] for those words: topic_word() without its zero columns."""
        if self.topic_words is not None:
            if self.topic_word_sums is None:
                raise ValueError("topic_word was not accumulated (need_topic_word=False)")
            return self.topic_words, (self.topic_word_sums / self.kept).to(self.dtype)
        words = self.batch.words
        # numpy's sort-based unique: torch.unique is far slower on a minibatch's words.
        ids = torch.from_numpy(np.unique(words.cpu().numpy())).to(words.device, torch.int64)
        if self.topic_word_sums is not None:
            return ids, (
                self.topic_word_sums[:, ids.to(self.topic_word_sums.device)] / self.kept
            ).to(self.dtype)
        n_words = int(ids[-1]) + 1 if ids.numel() else 0
        return ids, self.topic_word(n_words)[:, ids]


def widen(
    result: GibbsExpectations, rows: torch.Tensor, n_topics: int, n_words: int
) -> GibbsExpectations:
    """``result`` of sweeps over the topics ``rows`` only, as sweeps over all ``n_topics``
    (the others with no token): free slots take no part in the sweeps (lda.topic_ids).
    Per-token sums are first reduced by word (``n_words`` columns) and by document, so what
    is widened is (L, n_words) and (n, L), never (T, K)."""
    if result.summed is not None:
        result = result.reduced(n_words)
    rows = rows.to(result.batch.words.device)
    words = result.topic_word_sums
    if words is not None:  # word-major as the kernels keep it: the step reads it uncopied
        wide = words.new_zeros(words.shape[1], n_topics)
        words = wide.index_copy_(1, rows.to(words.device), words.T).T
    documents = result.document_topic_sums
    if documents is not None:
        wide = documents.new_zeros(documents.shape[0], n_topics)
        documents = wide.index_copy_(1, rows.to(documents.device), documents)
    return dataclasses.replace(result, topic_word_sums=words, document_topic_sums=documents)
