"""The sparse collapsed Gibbs kernel: exact enumeration, the dense kernel's law, and mutants of it
(a copy in this module, never in production code) that the same bounds must catch."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import torch

from lda.batch import Batch
from lda.gibbs import GibbsConfig, gibbs_expectations
from lda.gibbs import sparse_kernel as kernel
from lda.gibbs.expectations import SPARSE_MIN_CELLS, SPARSE_MIN_TOPICS, sparse_pays
from lda.gibbs.sparse import gather_columns, topics_from_columns
from lda.gibbs.start import topics_from_beta
from lda.parallel import Shard
from tests.lda.gibbs.test_expectations import exact_token_topics

K = 8  # enough topics that a document uses few of them: the sparse/dense split matters
W = 6
GAMMA = 0.1  # small, so forgetting n_dk^{-j} or the gamma term shows
DOCS = [[0, 1, 2, 1], [3, 3, 4, 5, 0], [], [5, 0, 2]]
SWEEPS, BURN_IN = 60_000, 200
# Enumeration bound on each E[n_dk] and each sum over documents of E[n_dkw] (sums of up to 5
# tokens' averages over 60k correlated sweeps): the sparse and dense kernels' errors were at most
# 0.047 over seeds 1-6 and both methods, each mutant's at least 0.21.
ENUMERATION_ATOL = 0.1


def _problem() -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    return torch._sample_dirichlet(torch.full((K, W), 0.5, dtype=torch.float64), generator=g)


def _truth(beta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact (n, K) E[n_dk] and (K, W) sum over documents of E[n_dkw]."""
    document_topic = torch.zeros(len(DOCS), K, dtype=torch.float64)
    topic_word = torch.zeros(K, W, dtype=torch.float64)
    for d, words in enumerate(DOCS):
        if words:
            tokens = exact_token_topics(beta, words, GAMMA)
            document_topic[d] = tokens.sum(0)
            topic_word.index_add_(1, torch.tensor(words), tokens.T)
    return document_topic, topic_word


def _error(
    got: tuple[torch.Tensor, torch.Tensor], truth: tuple[torch.Tensor, torch.Tensor]
) -> float:
    """Largest absolute difference (NaN counts as infinitely far)."""
    return max(
        float((a - b).abs().nan_to_num(nan=float("inf")).max())
        for a, b in zip(got, truth, strict=True)
    )


@numba.njit(cache=True)
def _copy_gibbs(
    words: np.ndarray,
    offsets: np.ndarray,
    beta_t: np.ndarray,  # (W, K)
    gamma: float,
    z: np.ndarray,
    uniforms: np.ndarray,
    burn_in: int,
    rao_blackwell: bool,
    exclude: bool,  # mutant when False: n_dk instead of n_dk^{-j}
    dense_draw: bool,  # mutant when False: the gamma * beta_kw part never drawn
    dense_sums: bool,  # mutant when False: the Rao-Blackwellised sums lose the dense part
) -> tuple[np.ndarray, np.ndarray]:
    """A sequential copy of the sparse kernel's decomposition, with switches that break it."""
    n_topics = beta_t.shape[1]
    document_topic = np.zeros((offsets.shape[0] - 1, n_topics))
    topic_word = np.zeros((n_topics, beta_t.shape[0]))
    for d in range(offsets.shape[0] - 1):
        counts = np.zeros(n_topics)
        for j in range(offsets[d], offsets[d + 1]):
            counts[z[j]] += 1.0
        for s in range(uniforms.shape[0]):
            for j in range(offsets[d], offsets[d + 1]):
                w = words[j]
                if exclude:
                    counts[z[j]] -= 1.0
                sparse_w = counts * beta_t[w]
                sparse = sparse_w.sum()
                dense_w = gamma * beta_t[w]
                dense = dense_w.sum() if dense_draw else 0.0
                total = sparse + dense
                u = uniforms[s, j] * total
                weights = sparse_w if u < sparse else dense_w
                u = u if u < sparse else u - sparse
                k_new = n_topics - 1
                running = 0.0
                for k in range(n_topics):
                    running += weights[k]
                    if running > u:
                        k_new = k
                        break
                if not exclude:
                    counts[z[j]] -= 1.0
                counts[k_new] += 1.0
                z[j] = k_new
                if s >= burn_in:
                    if rao_blackwell:
                        p = sparse_w / total
                        if dense_sums:
                            p = p + dense_w / total
                        document_topic[d] += p
                        topic_word[:, w] += p
                    else:
                        document_topic[d, k_new] += 1.0
                        topic_word[k_new, w] += 1.0
    return document_topic, topic_word


def _run_copy(
    beta: torch.Tensor,
    batch: Batch,
    gamma: float,
    sweeps: int,
    burn_in: int,
    method: str,
    seed: int,
    **switches: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(n, K) and (K, W) expectations of the copy (broken by ``switches`` set to False)."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randint(beta.shape[0], (batch.n_tokens,), generator=g).numpy().copy()
    uniforms = torch.rand((sweeps, batch.n_tokens), generator=g).numpy()
    flags = {"exclude": True, "dense_draw": True, "dense_sums": True} | switches
    document_topic, topic_word = _copy_gibbs(
        batch.words.numpy(), batch.offsets.numpy(), beta.T.contiguous().numpy(), gamma, z,
        uniforms, burn_in, method == "rao-blackwell", flags["exclude"], flags["dense_draw"],
        flags["dense_sums"],
    )  # fmt: skip
    kept = sweeps - burn_in
    return torch.from_numpy(document_topic) / kept, torch.from_numpy(topic_word) / kept


# The kernel walks a document's topic list, or past a share of K every topic in order: both
# must hold whatever the threshold between them.
WALKS = {"list": lambda n_topics: n_topics + 1, "all topics": lambda n_topics: 0}


@pytest.mark.slow
@pytest.mark.parametrize("walk", sorted(WALKS))
@pytest.mark.parametrize("method", ["exact", "rao-blackwell"])
def test_sparse_kernel_matches_enumeration(method, walk, monkeypatch):
    monkeypatch.setattr("lda.gibbs.sparse.by_topic_from", WALKS[walk])
    beta = _problem()
    config = GibbsConfig(GAMMA, SWEEPS, BURN_IN, method, "cpu", kernel="sparse")
    result = gibbs_expectations(
        beta, Batch.from_ids(DOCS), config, torch.Generator().manual_seed(1)
    )
    assert result.summed is None and result.topic_words is not None  # the sparse kernel ran
    got = (result.document_topic(), result.topic_word(W))
    assert _error(got, _truth(beta)) < ENUMERATION_ATOL


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "mutant"),
    [
        ("exact", None),
        ("rao-blackwell", None),
        ("exact", "exclude"),
        ("rao-blackwell", "exclude"),
        ("exact", "dense_draw"),
        ("rao-blackwell", "dense_draw"),
        ("rao-blackwell", "dense_sums"),
    ],
)
def test_enumeration_bound_catches_mutants(method, mutant):
    """The copy passes the enumeration bound; each broken copy fails it."""
    beta = _problem()
    switches = {} if mutant is None else {mutant: False}
    got = _run_copy(beta, Batch.from_ids(DOCS), GAMMA, SWEEPS, BURN_IN, method, 1, **switches)
    error = _error(got, _truth(beta))
    if mutant is None:
        assert error < ENUMERATION_ATOL
    else:
        assert error > ENUMERATION_ATOL


# The dense kernel's law on a bigger problem (K = 40 over 150 words, 25 documents, beta and
# gamma small as after training): the largest difference of any E[n_dk] or sum of E[n_dkw]
# between a dense run and another dense or sparse run was 0.15-0.22 (seeds 1-4, both methods);
# the copy without n_dk^{-j} differed by >= 1.1, without the dense part of the Rao-Blackwellised
# sums by >= 1.5.
LAW_K, LAW_W, LAW_GAMMA = 40, 150, 0.1
LAW_SWEEPS, LAW_BURN_IN = 20_000, 200
LAW_ATOL = 0.5


def _law_problem() -> tuple[torch.Tensor, Batch]:
    g = torch.Generator().manual_seed(11)
    alpha = torch.full((LAW_K, LAW_W), 0.1, dtype=torch.float64)
    beta = torch._sample_dirichlet(alpha, generator=g)
    lengths = torch.randint(0, 60, (25,), generator=g)
    docs = [torch.randint(LAW_W, (int(n),), generator=g).tolist() for n in lengths]
    return beta, Batch.from_ids(docs)


def _run(
    beta: torch.Tensor, batch: Batch, method: str, kernel: str, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    config = GibbsConfig(
        LAW_GAMMA, LAW_SWEEPS, LAW_BURN_IN, method, "cpu", kernel=kernel,  # type: ignore[arg-type]
    )  # fmt: skip
    result = gibbs_expectations(beta, batch, config, torch.Generator().manual_seed(seed))
    return result.document_topic(), result.topic_word(beta.shape[1])


@pytest.fixture(scope="module")
def dense_law() -> tuple[torch.Tensor, torch.Tensor]:
    beta, batch = _law_problem()
    return _run(beta, batch, "rao-blackwell", "dense", 100)


@pytest.mark.slow
@pytest.mark.parametrize("walk", ["list", "default"])
@pytest.mark.parametrize("method", ["exact", "rao-blackwell"])
def test_sparse_and_dense_kernels_share_their_law(dense_law, method, walk, monkeypatch):
    if walk != "default":
        monkeypatch.setattr("lda.gibbs.sparse.by_topic_from", WALKS[walk])
    beta, batch = _law_problem()
    assert _error(_run(beta, batch, method, "sparse", 1), dense_law) < LAW_ATOL


@pytest.mark.slow
@pytest.mark.parametrize("mutant", ["exclude", "dense_draw", "dense_sums"])
def test_law_bound_catches_mutants(dense_law, mutant):
    """Fewer sweeps than the sparse kernel's run: the mutants' bias dwarfs their noise."""
    beta, batch = _law_problem()
    got = _run_copy(
        beta, batch, LAW_GAMMA, 5_000, LAW_BURN_IN, "rao-blackwell", 1, **{mutant: False}
    )
    assert _error(got, dense_law) > LAW_ATOL


def _small() -> tuple[torch.Tensor, Batch]:
    g = torch.Generator().manual_seed(3)
    beta = torch._sample_dirichlet(torch.full((12, 40), 0.2, dtype=torch.float64), generator=g)
    docs = [torch.randint(30, (int(n),), generator=g).tolist() for n in [0, 1, 17, 33, 5, 60]]
    return beta, Batch.from_ids(docs)


@pytest.mark.parametrize("method", ["exact", "rao-blackwell"])
def test_only_the_minibatch_columns_of_beta_are_read(method):
    """NaN in every other column changes nothing, and a beta of 10^12 words (a stride-0 view)
    runs: the kernel gathers K x W_b, never K x W."""
    beta, batch = _small()
    used = torch.unique(batch.words)
    poisoned = torch.full_like(beta, float("nan"))
    poisoned[:, used] = beta[:, used]

    def run(b: torch.Tensor, init: str) -> tuple[torch.Tensor, torch.Tensor]:
        config = GibbsConfig(
            GAMMA, 6, 2, method, "cpu", init=init, kernel="sparse",  # type: ignore[arg-type]
        )  # fmt: skip
        r = gibbs_expectations(b, batch, config, torch.Generator().manual_seed(4))
        ids, sums = r.topic_word_compact()
        assert torch.equal(ids, used)
        return r.document_topic(), sums

    for init in ("uniform", "beta"):
        clean, dirty = run(beta, init), run(poisoned, init)
        assert torch.equal(clean[0], dirty[0]) and torch.equal(clean[1], dirty[1])
    column = beta[:, :1]
    huge = column.expand(12, 10**12)
    assert torch.equal(run(huge, "beta")[0], run(column.expand(12, 40).contiguous(), "beta")[0])


def test_start_from_beta_draws_as_the_dense_path():
    beta, batch = _small()
    u = torch.rand(batch.n_tokens, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    dense = topics_from_beta(beta, batch.words, torch.Generator().manual_seed(5), True)
    assert torch.equal(topics_from_columns(gather_columns(beta, batch.words), u), dense)


@pytest.mark.parametrize("method", ["exact", "rao-blackwell"])
def test_word_major_columns_and_skipped_document_sums_change_no_draw(method):
    """The learner's call: beta handed as (K, W_b) columns of word-major storage (read in place,
    not gathered) and no document sums asked for; the word sums are those of the plain call,
    already laid out by word, and reading the document sums says they were not kept."""
    beta, batch = _small()
    used, local = torch.unique(batch.words, return_inverse=True)
    columns = beta[:, used].T.contiguous().T  # (K, W_b), word-major

    def run(b: torch.Tensor, words: torch.Tensor, documents: bool):
        config = GibbsConfig(
            GAMMA, 7, 3, method, "cpu", init="beta", kernel="sparse",
            need_document_topic=documents,
        )  # fmt: skip
        return gibbs_expectations(
            b, Batch(words, batch.offsets), config, torch.Generator().manual_seed(9)
        )

    plain = run(beta, batch.words, True)
    lean = run(columns, local, False)
    _, sums = plain.topic_word_compact()
    by_column = lean.topic_word(used.numel())
    assert by_column.T.is_contiguous()  # no scatter into a (K, W_b) copy
    torch.testing.assert_close(by_column, sums, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="need_document_topic"):
        lean.document_topic()


@pytest.mark.parametrize("method", ["exact", "rao-blackwell"])
def test_shards_add_up_to_the_whole_minibatch(method):
    """Two ranks, each drawing for all tokens and using its slice, give the one learner's
    document sums draw for draw, and its word sums once added."""
    beta, batch = _small()
    cut = 3
    split = int(batch.offsets[cut])

    def run(b: Batch, shard: Shard | None):
        config = GibbsConfig(GAMMA, 7, 3, method, "cpu", init="beta", kernel="sparse")
        return gibbs_expectations(beta, b, config, torch.Generator().manual_seed(6), shard)

    whole = run(batch, None)
    first = run(Batch(batch.words[:split], batch.offsets[: cut + 1]), Shard(0, batch.n_tokens))
    rest = Batch(batch.words[split:], batch.offsets[cut:] - split)
    second = run(rest, Shard(split, batch.n_tokens))
    parts = torch.cat([first.document_topic(), second.document_topic()])
    assert torch.equal(parts, whole.document_topic())
    summed = first.topic_word(40) + second.topic_word(40)
    torch.testing.assert_close(summed, whole.topic_word(40), rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["exact", "rao-blackwell"])
def test_thread_count_changes_no_draw(method):
    beta, batch = _small()
    threads = numba.get_num_threads()
    runs = []
    try:
        for n in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(n)
            config = GibbsConfig(GAMMA, 9, 3, method, "cpu", kernel="sparse")
            r = gibbs_expectations(beta, batch, config, torch.Generator().manual_seed(8))
            runs.append((r.document_topic(), r.topic_word(40)))
    finally:
        numba.set_num_threads(threads)
    assert torch.equal(runs[0][0], runs[1][0])  # a document's sums never leave its thread
    torch.testing.assert_close(runs[0][1], runs[1][1], rtol=0, atol=1e-12)


def test_auto_crossover():
    assert not sparse_pays(SPARSE_MIN_TOPICS - 1, 50)
    assert sparse_pays(SPARSE_MIN_TOPICS, 50)
    assert not sparse_pays(50, SPARSE_MIN_CELLS // 50 - 1)
    assert sparse_pays(50, SPARSE_MIN_CELLS // 50)


def test_auto_picks_sparse_from_the_crossover_and_sums_add_up():
    g = torch.Generator().manual_seed(9)
    docs = [torch.randint(50, (int(n),), generator=g).tolist() for n in [4, 0, 9]]
    batch = Batch.from_ids(docs)
    for n_topics, sparse in ((SPARSE_MIN_TOPICS - 1, False), (SPARSE_MIN_TOPICS, True)):
        alpha = torch.full((n_topics, 50), 0.1, dtype=torch.float64)
        beta = torch._sample_dirichlet(alpha, generator=g)
        for method in ("exact", "rao-blackwell"):
            config = GibbsConfig(GAMMA, 4, 1, method, "cpu")
            r = gibbs_expectations(beta, batch, config, torch.Generator())
            assert (r.summed is None) == sparse
            torch.testing.assert_close(r.document_topic().sum(1), batch.lengths.double())
            ids, compact = r.topic_word_compact()
            assert torch.equal(ids, torch.unique(batch.words))
            torch.testing.assert_close(compact.sum(0), torch.bincount(batch.words)[ids].double())
            torch.testing.assert_close(r.topic_word(50)[:, ids], compact)
    scorer = gibbs_expectations(
        beta, batch, GibbsConfig(GAMMA, 4, 1, need_topic_word=False), torch.Generator()
    )
    torch.testing.assert_close(scorer.document_topic().sum(1), batch.lengths.double())
    with pytest.raises(ValueError, match="need_topic_word"):
        scorer.topic_word(50)
    with pytest.raises(ValueError, match="per-token"):
        _ = scorer.token_topics


def test_empty_documents_and_empty_batch():
    beta, _ = _small()
    for docs in ([[], []], [[], [3, 3], []]):
        batch = Batch.from_ids(docs)
        r = gibbs_expectations(
            beta, batch, GibbsConfig(GAMMA, 3, 1, kernel="sparse"), torch.Generator()
        )
        torch.testing.assert_close(r.document_topic().sum(1), batch.lengths.double())
        assert r.topic_word(40).sum() == batch.n_tokens


def _walk(u: float, k_old: int, weights: np.ndarray) -> int:
    """The inverse CDF in topic order with the current topic first, one topic at a time."""
    if u < weights[k_old]:
        return k_old
    u -= weights[k_old]
    running, pick = 0.0, k_old
    for k, weight in enumerate(weights):
        if k != k_old and weight > 0.0:
            pick = k
            running += weight
            if running > u:
                break
    return pick


def test_block_sums_draw_the_topic_a_walk_over_every_topic_draws():
    """A crowded document's draw walks block sums, then one block: the same topic as a walk
    topic by topic, wherever the current topic is and whatever weights are zero."""
    rng = np.random.default_rng(3)
    n_topics = 3 * kernel.BLOCK + 5  # blocks of the kernel's size and a short last one
    blocks = np.empty(-(-n_topics // kernel.BLOCK))
    for _ in range(4_000):
        weights = rng.gamma(0.3, size=n_topics) * (rng.random(n_topics) < 0.7)
        k_old = int(rng.integers(n_topics))
        total = kernel._block_sums(weights, blocks)
        assert total == pytest.approx(weights.sum(), rel=1e-12)
        u = float(rng.random()) * total
        assert kernel._draw_blocked(u, weights[k_old], k_old, weights, blocks) == _walk(
            u, k_old, weights
        )


@pytest.mark.parametrize(("kernel", "n_words"), [("sparse", 10), ("sparse", 12), ("dense", 10)])
def test_kept_sums_divided_by_their_count_are_the_expected_counts(kernel, n_words):
    """Undivided only where the sparse kernel's sums are every column (the lazy chain's
    renumbered words): words 10 and 11 are in no document."""
    g = torch.Generator().manual_seed(4)
    batch = Batch.from_ids([[0, 1, 2, 3, 4, 1, 0], [5, 6, 7, 0], [], [8, 9, 2, 2]])
    beta = torch._sample_dirichlet(torch.full((5, n_words), 0.3, dtype=torch.float64), generator=g)
    config = GibbsConfig(GAMMA, 6, 2, "rao-blackwell", "cpu", kernel=kernel)
    r = gibbs_expectations(beta, batch, config, torch.Generator())
    sums, kept = r.topic_word_kept_sums(n_words)
    assert kept == (4 if (kernel, n_words) == ("sparse", 10) else 1)
    torch.testing.assert_close(sums / kept, r.topic_word(n_words), rtol=1e-15, atol=0)
