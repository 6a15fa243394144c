"""Topic moves scored in closed form: the change a merge, a split or a retire makes to the
collapsed log joint log p(w, z) of the recent documents (docs/model.md, "Scoring moves in closed
form").

The tokens of the window's documents each take one topic, drawn from their conditional given
beta_mean and the documents' expected topic counts (one Gibbs draw with the topics fixed). With
beta and the documents' proportions integrated out, that draw's counts are sufficient: a
topic's word counts n_k give its Dirichlet-multinomial evidence

    G(n_k) = sum_w [lnGamma(alpha_S + n_kw) - lnGamma(alpha_S)] - [lnGamma(W alpha_S + n_k.)
             - lnGamma(W alpha_S)],

and a document's topic counts n_d the Dirichlet-multinomial of its proportions under gamma. A
move changes a few topics' counts, so its score is a few such terms: no document is revisited,
no step is taken. alpha_S = alpha S / N puts the chain's prior, which weighs against N / n times
a minibatch's counts, against the S documents of the window instead. Pure: the draws come from
the caller's generator.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch
from scipy import sparse

from lda.shaping import draw_kernel

CANDIDATES = 16  # topics a token of the window is drawn among: its document's likeliest
SUB_SWEEPS = 10  # rounds that settle a split's two halves over the topic's documents
PRINCIPAL_ROUNDS = 30  # power iterations for a split's principal direction
MIN_TOKENS = 10  # a document's tokens of a topic that make it one the halves are drawn by
SPLIT_PSEUDO = 0.5  # tokens a half's counts are smoothed by


@dataclass(frozen=True)
class Draw:
    """One topic per token of the window's documents, and the counts it makes: the
    sufficient statistics every score reads. Topics are indexed by live position."""

    token_word: torch.Tensor  # (T,) int64 column in ``words`` of each token
    token_doc: torch.Tensor  # (T,) int64 document of each token
    token_topic: torch.Tensor  # (T,) int64 live position each token drew
    words: torch.Tensor  # (U,) int64 the vocabulary ids the window uses
    topic_word: torch.Tensor  # (L, U) float64 n_kw
    doc_topic: torch.Tensor  # (D, L) float64 n_dk
    beta_words: torch.Tensor  # (U, L) float64 the live topics' beta at the window's words
    gamma: torch.Tensor  # (L,) float64 gamma_k of the live topics
    alpha: float  # alpha_S, the topic-word prior on the window's scale
    n_words: int  # W
    scale: float = 1.0  # documents the window stands for, per document it holds

    def evidence(self, counts: torch.Tensor) -> torch.Tensor:
        """G of each row of ``counts`` at the draw's scale."""
        return evidence(counts * self.scale, self.alpha, self.n_words)

    @property
    def lengths(self) -> torch.Tensor:
        """(D,) tokens per document."""
        return self.doc_topic.sum(dim=1)

    @property
    def gamma_total(self) -> float:
        return float(self.gamma.sum())

    def tokens_of(self, k: int) -> torch.Tensor:
        """(n_k,) int64 the tokens that drew live position ``k``, ascending: one sort of the
        draw serves every proposal, instead of a pass over all tokens for each."""
        order, starts = self._by_topic
        return order[int(starts[k]) : int(starts[k + 1])]

    @cached_property
    def _by_topic(self) -> tuple[torch.Tensor, torch.Tensor]:
        order = torch.argsort(self.token_topic, stable=True)
        L = self.topic_word.shape[0]
        starts = torch.searchsorted(self.token_topic[order], torch.arange(L + 1))
        return order, starts


def draw(
    words: torch.Tensor,
    lengths: torch.Tensor,
    expected: torch.Tensor,
    beta: torch.Tensor,
    gamma: torch.Tensor,
    alpha: float,
    generator: torch.Generator,
    rows: torch.Tensor | None = None,
) -> Draw:
    """Each token of the documents (``words`` (T,) one after another, ``lengths`` (D,)) given
    a topic among the ``beta`` rows ((L, W), the live topics' beta_mean; or (K, W) and the
    live ``rows`` of it: only the window's words are read), drawn with
    probability proportional to (E[n_dk] + gamma_k) beta[k, w] (``expected`` (D, L) the
    documents' expected counts from the learner's sweeps) among the document's CANDIDATES
    topics of most E[n_dk] + gamma_k: a document uses few topics, and one it gave under a
    token in the learner's sweeps holds next to none of its tokens."""
    W = beta.shape[1]
    D = int(lengths.numel())
    token_doc = torch.repeat_interleave(torch.arange(D), lengths)
    vocabulary, token_word = torch.unique(words, return_inverse=True)
    # (U, K or L): each word's row of topics, read as rows of beta's transpose (the lazy
    # chain keeps beta word-major, so these are contiguous reads and no transposed copy)
    columns = beta.T.index_select(0, vocabulary.to(beta.device))
    columns = columns if rows is None else columns[:, rows.to(columns.device)]
    beta_u = columns.to("cpu", torch.float64).contiguous()  # (U, L)
    L = beta_u.shape[1]
    M = min(L, CANDIDATES)
    weight, candidates = (expected.to(torch.float64) + gamma.to(torch.float64)).topk(M, dim=1)
    uniforms = torch.rand(words.numel(), generator=generator, dtype=torch.float64)
    topics = torch.empty(words.numel(), dtype=torch.int64)
    draw_kernel.draw_topics(
        token_doc.numpy(),
        token_word.contiguous().numpy(),
        candidates.contiguous().numpy(),
        weight.contiguous().numpy(),
        beta_u.numpy(),
        uniforms.numpy(),
        topics.numpy(),
    )
    U = int(vocabulary.numel())
    return Draw(
        token_word=token_word,
        token_doc=token_doc,
        token_topic=topics,
        words=vocabulary,
        topic_word=_bincount2(topics, token_word, L, U),
        doc_topic=_bincount2(token_doc, topics, D, L),
        beta_words=beta_u,
        gamma=gamma.to(torch.float64),
        alpha=alpha,
        n_words=W,
    )


# --- the terms ------------------------------------------------------------------------------


def evidence(counts: torch.Tensor, alpha: float, n_words: int) -> torch.Tensor:
    """G(n) of each row of ``counts`` ((r, U), words the window does not use count 0): a
    topic's log Dirichlet-multinomial evidence under a symmetric Dirichlet(alpha) on W words."""
    a = torch.tensor(alpha, dtype=torch.float64)
    words = (torch.lgamma(a + counts) - torch.lgamma(a)).sum(dim=1)
    total = n_words * a
    return words - (torch.lgamma(total + counts.sum(dim=1)) - torch.lgamma(total))


def _documents(counts: torch.Tensor, gamma: torch.Tensor) -> torch.Tensor:
    """sum_d sum_k [lnGamma(gamma_k + n_dk) - lnGamma(gamma_k)] over ``counts`` ((D, r))."""
    return (torch.lgamma(gamma + counts) - torch.lgamma(gamma)).sum()


def _normaliser(lengths: torch.Tensor, total: float) -> torch.Tensor:
    """sum_d [lnGamma(gamma_0) - lnGamma(gamma_0 + n_d)]: what the documents' prior total costs."""
    g = torch.tensor(total, dtype=torch.float64)
    return (torch.lgamma(g) - torch.lgamma(g + lengths)).sum()


def _total_change(d: Draw, total_after: float) -> float:
    """The documents' normaliser when gamma_0 becomes ``total_after``."""
    lengths = d.lengths
    return d.scale * float(_normaliser(lengths, total_after) - _normaliser(lengths, d.gamma_total))


# --- the moves ------------------------------------------------------------------------------


def merge_gain(d: Draw, a: int, b: int, learned: bool) -> float:
    """log p(w, z) after topic ``b`` joins ``a`` minus before (live positions). The merged
    topic's gamma: gamma_a + gamma_b when the prior is learned (gamma_0 kept), else the
    symmetric value (gamma_0 falls by one topic's)."""
    n = d.topic_word[[a, b]]
    words = d.evidence(n.sum(dim=0, keepdim=True)) - d.evidence(n).sum()
    ga, gb = d.gamma[a], d.gamma[b]
    merged = ga + gb if learned else ga
    counts = d.doc_topic[:, [a, b]]
    docs = _documents(counts.sum(dim=1, keepdim=True), merged.reshape(1)) - _documents(
        counts, d.gamma[[a, b]]
    )
    total = d.gamma_total - float(ga + gb - merged)
    return float(words.squeeze() + d.scale * docs) + _total_change(d, total)


def split_gain(d: Draw, k: int, first: torch.Tensor, learned: bool) -> float:
    """log p(w, z) after topic ``k`` divides into the tokens ``first`` ((T,) bool, True for
    the tokens of k going to the first half; the rest of k's tokens go to the second) and the
    rest, minus before. The halves' gamma: gamma_k shared by their token counts when learned
    (gamma_0 kept), else the symmetric value for both (gamma_0 grows by one topic's)."""
    on_k = d.tokens_of(k)
    side = first[on_k]
    a_tokens, b_tokens = on_k[side], on_k[~side]
    U, D = d.words.numel(), d.doc_topic.shape[0]
    wa = torch.bincount(d.token_word[a_tokens], minlength=U).to(torch.float64)
    wb = torch.bincount(d.token_word[b_tokens], minlength=U).to(torch.float64)
    used = d.topic_word[k] > 0  # a word k never drew adds lnGamma(alpha) - lnGamma(alpha) = 0
    halves = torch.stack([wa[used], wb[used]])
    words = d.evidence(halves).sum() - d.evidence(d.topic_word[k : k + 1, used]).squeeze()
    da = torch.bincount(d.token_doc[a_tokens], minlength=D).to(torch.float64)
    db = torch.bincount(d.token_doc[b_tokens], minlength=D).to(torch.float64)
    gk = d.gamma[k]
    if learned:
        share = float(wa.sum()) / max(float(wa.sum() + wb.sum()), 1e-300)
        floor = torch.finfo(torch.float64).tiny
        gammas = torch.stack([(gk * share).clamp_min(floor), (gk * (1 - share)).clamp_min(floor)])
        total = d.gamma_total
    else:
        gammas = torch.stack([gk, gk])
        total = d.gamma_total + float(gk)
    docs = _documents(torch.stack([da, db], dim=1), gammas) - _documents(
        d.doc_topic[:, k : k + 1], gk.reshape(1)
    )
    return float(words + d.scale * docs) + _total_change(d, total)


def reassign(d: Draw, k: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens of topic ``k``, the live position each is drawn to among the other topics with
    probability proportional to (n_dj + gamma_j) beta[j, w]): where a retire sends them."""
    on_k = d.tokens_of(k)
    if on_k.numel() == 0:
        return on_k, on_k
    weight = d.doc_topic[d.token_doc[on_k]] + d.gamma
    p = weight * d.beta_words[d.token_word[on_k]]
    p[:, k] = 0.0
    return on_k, _categorical(p, generator)


def retire_gain(d: Draw, k: int, tokens: torch.Tensor, to: torch.Tensor) -> float:
    """log p(w, z) after topic ``k`` is taken away and its ``tokens`` go to the live positions
    ``to`` (:func:`reassign`), minus before; gamma_0 loses gamma_k."""
    L, U = d.topic_word.shape[0], d.words.numel()
    used = d.topic_word[k] > 0  # a word k never drew adds nothing to its evidence
    removed = -d.evidence(d.topic_word[k : k + 1, used]).squeeze()
    removed = removed - d.scale * _documents(d.doc_topic[:, k : k + 1], d.gamma[k].reshape(1))
    total = d.gamma_total - float(d.gamma[k])
    if tokens.numel() == 0:
        return float(removed) + _total_change(d, total)
    doc, word = d.token_doc[tokens], d.token_word[tokens]
    # the receiving topics' evidence changes only where they receive: their (topic, word)
    # counts and their totals
    pairs, added = torch.unique(to * U + word, return_counts=True)
    before = d.topic_word[pairs // U, pairs % U]
    a = torch.tensor(d.alpha, dtype=torch.float64)
    c = d.scale
    gained = (torch.lgamma(a + c * (before + added)) - torch.lgamma(a + c * before)).sum()
    per_topic = torch.bincount(to, minlength=L).to(torch.float64)
    receivers = torch.nonzero(per_topic).squeeze(1)
    totals = d.topic_word[receivers].sum(dim=1)
    prior = d.n_words * a
    gained = (
        gained
        - (
            torch.lgamma(prior + c * (totals + per_topic[receivers]))
            - torch.lgamma(prior + c * totals)
        ).sum()
    )
    # only the documents of k's tokens change: the others' terms cancel
    docs, doc = torch.unique(doc, return_inverse=True)
    moved = _bincount2(doc, to, int(docs.numel()), L)[:, receivers]
    counts = d.doc_topic[docs][:, receivers]
    g = d.gamma[receivers]
    docs = _documents(counts + moved, g) - _documents(counts, g)
    return float(removed + gained + d.scale * docs) + _total_change(d, total)


def halves(
    d: Draw,
    k: int,
    fraction: torch.Tensor | None,
    sweeps: int = SUB_SWEEPS,
) -> torch.Tensor:
    """(T,) bool: topic ``k``'s tokens divided between two halves document by document (a
    document's tokens of k all go one way, as the sweeps put them under a small gamma). The
    documents with at least MIN_TOKENS tokens of k are split by cosine two-means on their
    counts of k's words, each word weighed by log(documents / documents using it) (a word all
    of k's documents use tells the halves nothing), in ``sweeps`` rounds started from
    ``fraction`` ((W,), a proposal's f: the documents it leans to most) when given, else from
    their principal direction; the other documents go to the nearer half. All False (no
    split) when a side would be empty."""
    on_k = d.tokens_of(k)
    first = torch.zeros(d.token_topic.numel(), dtype=torch.bool)
    if on_k.numel() == 0:
        return first
    docs, doc = torch.unique(d.token_doc[on_k], return_inverse=True)
    columns, word = torch.unique(d.token_word[on_k], return_inverse=True)
    n_docs, n_columns = int(docs.numel()), int(columns.numel())
    # the (document, word) counts of k's tokens, sparse: a topic's documents use few of its words
    cells, counts = torch.unique(doc * n_columns + word, return_counts=True)
    row, col = cells // n_columns, cells % n_columns
    values = counts.to(torch.float64)
    lengths = torch.bincount(row, weights=values, minlength=n_docs)
    sure = lengths >= MIN_TOKENS
    if int(sure.sum()) < 4:
        return first
    # each word weighed by how few of the topic's documents use it (a word every document of
    # the topic uses tells the halves nothing); rows of unit length
    used = torch.bincount(col, minlength=n_columns).to(torch.float64)
    weighted = values * torch.log(n_docs / used[col])
    norms = torch.bincount(row, weights=weighted**2, minlength=n_docs).sqrt().clamp_min(1e-300)
    unit = sparse.csr_matrix(
        ((weighted / norms[row]).numpy(), (row.numpy(), col.numpy())), shape=(n_docs, n_columns)
    )  # (the cells are unique and in range: made above)
    start = None
    if fraction is not None:  # the documents f leans to most, against the others
        f = fraction.to(torch.float64)[d.words[columns]].clamp(1e-6, 1 - 1e-6)
        lean = torch.bincount(row, weights=values * (f.log() - (-f).log1p())[col], minlength=n_docs)
        start = lean > lean[sure].median()
    side = two_means(unit, sure, sweeps, start)
    if bool(side.all()) or not bool(side.any()):
        return first
    first[on_k] = side[doc]
    return first


def half_tokens(d: Draw, k: int, first: torch.Tensor) -> tuple[int, int]:
    """The window's tokens of topic ``k`` in the first half and in the second."""
    side = first[d.tokens_of(k)]
    n = int(side.sum())
    return n, int(side.numel()) - n


def fraction_of(d: Draw, k: int, first: torch.Tensor) -> torch.Tensor:
    """(W,) f: each word's share in the first half, from the halves' window counts smoothed by
    half a token towards the halves' token ratio s (f_w = (a_w + s/2) / (a_w + b_w + 1/2));
    a word the window does not use divides as s."""
    on_k = d.tokens_of(k)
    side = first[on_k]
    U = int(d.words.numel())
    a = torch.bincount(d.token_word[on_k[side]], minlength=U).to(torch.float64)
    b = torch.bincount(d.token_word[on_k[~side]], minlength=U).to(torch.float64)
    ratio = float(a.sum()) / max(float(a.sum() + b.sum()), 1.0)
    f = torch.full((d.n_words,), ratio, dtype=torch.float64)
    f[d.words] = (a + SPLIT_PSEUDO * ratio) / (a + b + SPLIT_PSEUDO)
    return f


def two_means(
    unit: sparse.csr_matrix, sure: torch.Tensor, iterations: int, start: torch.Tensor | None = None
) -> torch.Tensor:
    """(m,) bool: the rows of ``unit`` ((m, n) sparse, each of unit length) split in two by
    cosine two-means over the ``sure`` rows, started from ``start`` or from the sure rows'
    principal direction (:func:`principal_side`); every row then goes to the nearer centre.
    All False when a side empties. (scipy's CSR products: a topic's few hundred documents are
    far below what torch's sparse kernels pay off at.)"""
    m = unit.shape[0]
    nothing = torch.zeros(m, dtype=torch.bool)
    ok = sure.numpy()
    unit_t = unit.T.tocsr()
    if start is None or bool(start[sure].all()) or not bool(start[sure].any()):
        start = principal_side(unit, sure)
    side = (start & sure).numpy()
    if not side.any() or bool(side[ok].all()):
        return nothing
    members = np.stack([side, ok & ~side], axis=1).astype(np.float64)
    for _ in range(iterations):
        centres = unit_t @ members  # (n, 2)
        centres /= np.maximum(np.linalg.norm(centres, axis=0, keepdims=True), 1e-300)
        likeness = unit @ centres  # (m, 2)
        side = likeness[:, 0] >= likeness[:, 1]
        if bool(side[ok].all()) or not bool(side[ok].any()):
            return nothing
        members = np.stack([side & ok, ok & ~side], axis=1).astype(np.float64)
    return torch.from_numpy(side)


def principal_side(
    unit: sparse.csr_matrix, sure: torch.Tensor, rounds: int = PRINCIPAL_ROUNDS
) -> torch.Tensor:
    """(m,) bool: the rows on the positive side of the sure rows' principal direction, the top
    right singular vector of their centred matrix (power iteration from the longest sure row,
    centred). A start of two balanced halves: started from one document and the one least like
    it, two-means mostly peeled a few outlying documents off a topic (halves under the dead
    line, refused), as principal-direction bisection does not (docs/model.md, "The shaper")."""
    rows = np.flatnonzero(sure.numpy())
    x = unit[rows]
    mu = np.asarray(x.mean(axis=0)).ravel()
    longest = int(np.asarray(x.sum(axis=1)).ravel().argmax())
    v = x.getrow(longest).toarray().ravel() - mu
    for _ in range(rounds):  # v <- C^T C v, C = x - 1 mu^T, never made dense
        u = x @ v - mu @ v
        v = x.T @ u - mu * u.sum()
        v /= max(float(np.linalg.norm(v)), 1e-300)
    return torch.from_numpy(unit @ v - mu @ v > 0)


def _categorical(p: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """(t,) one draw per row of ``p`` ((t, m) non-negative weights), the column's index: the
    first whose running sum passes a uniform share of the row's."""
    running = p.cumsum(dim=1)
    u = torch.rand(p.shape[0], 1, generator=generator, dtype=p.dtype) * running[:, -1:]
    return torch.searchsorted(running, u).squeeze(1).clamp_max(p.shape[1] - 1)


def _bincount2(rows: torch.Tensor, cols: torch.Tensor, n_rows: int, n_cols: int) -> torch.Tensor:
    """(n_rows, n_cols) float64 counts of the (row, col) pairs."""
    flat = torch.bincount(rows * n_cols + cols, minlength=n_rows * n_cols)
    return flat.reshape(n_rows, n_cols).to(torch.float64)
