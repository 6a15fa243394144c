"""The CUDA Gibbs kernel (lda/gibbs/dense_cuda.py) under numba's CUDA simulator, in CI without a
GPU, or on the GPU itself with STREAMLDA_CUDA_TESTS=device (tests/support/cuda_child.py).

numba reads NUMBA_ENABLE_CUDASIM when it is first imported, and other test files import it
first in the same pytest process, so the simulated runs happen in ONE child process (this file
run as a script with the variable set; ``_SIMULATIONS`` below) whose results, as JSON, the tests
here judge: agreement with exact enumeration (as tests/lda/gibbs/test_expectations.py does for the
CPU
kernel), equality in law with the CPU kernel, the learner's device path, the random stream,
shards, and draw-for-draw equality with a sequential reference at several block sizes. The
simulator runs each GPU thread as a Python thread, so the problems are tiny.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from lda.batch import Batch
from lda.config import Backend, Method
from lda.gibbs import GibbsConfig, gibbs_expectations
from lda.parallel import Shard
from tests.support.cuda_child import check_target, simulated

GAMMA = 0.1  # small, so forgetting to remove the current token's count (n_dk^-j) shows
# One-token documents are the sharpest probe of n_dk^-j: without it their topic is drawn from
# (gamma + 1{k = current}) beta_kw, a sticky chain whose law is off by 0.07-0.12 here, while the
# right chain draws independently from beta_kw.
ENUMERATION_DOCS = [[1], [0, 1], [3, 4], [0]]
ENUMERATION_SWEEPS: dict[Method, int] = {"exact": 1200, "rao-blackwell": 600}
LAW_SWEEPS, LAW_BURN_IN, LAW_RUNS = 120, 20, 60
METHODS: tuple[Method, ...] = ("exact", "rao-blackwell")


def _f64(values: Any) -> torch.Tensor:
    """A float64 tensor from the child's JSON lists."""
    return torch.tensor(values, dtype=torch.float64)


def tiny_beta() -> torch.Tensor:
    """K = 3, W = 6: the problem of tests/lda/gibbs/test_expectations.py."""
    g = torch.Generator().manual_seed(7)
    return torch._sample_dirichlet(torch.full((3, 6), 0.5, dtype=torch.float64), generator=g)


def law_problem() -> tuple[torch.Tensor, Batch]:
    """K = 4, W = 10, four short documents sharing words (the CPU-law comparison)."""
    g = torch.Generator().manual_seed(3)
    beta = torch._sample_dirichlet(torch.full((4, 10), 0.3, dtype=torch.float64), generator=g)
    docs = [torch.randint(10, (n,), generator=g).tolist() for n in (3, 5, 2, 6)]
    return beta, Batch.from_ids(docs)


def learner_config(backend: Backend) -> Any:
    from lda.model import LearnerConfig

    return LearnerConfig(
        n_topics=3, n_words=8, sampler="sgrld", sweeps=30, burn_in=10, gibbs_backend=backend
    )


LEARNER_DOCS = [[0, 1, 2, 1, 5], [3, 3, 4], [6, 7, 0, 2]]


# ------------------------------------------------------------------------------------------
# The simulated side: run in the child process (NUMBA_ENABLE_CUDASIM=1), return JSON values.


def _sim_enumeration() -> dict[str, Any]:
    beta, batch = tiny_beta(), Batch.from_ids(ENUMERATION_DOCS)
    out: dict[str, Any] = {}
    for method, sweeps in ENUMERATION_SWEEPS.items():
        config = GibbsConfig(GAMMA, sweeps, 20, method, "cuda")
        result = gibbs_expectations(beta, batch, config, torch.Generator().manual_seed(11))
        out[method] = {
            "document_topic": result.document_topic().tolist(),
            "topic_word": result.topic_word(6).tolist(),
        }
    return out


def _sim_cpu_law() -> dict[str, Any]:
    beta, batch = law_problem()
    out: dict[str, Any] = {}
    for method in METHODS:
        config = GibbsConfig(GAMMA, LAW_SWEEPS, LAW_BURN_IN, method, "cuda")
        result = gibbs_expectations(beta, batch, config, torch.Generator().manual_seed(5))
        out[method] = {
            "document_topic": result.document_topic().tolist(),
            "topic_word": result.topic_word(10).tolist(),
        }
    return out


def _sim_learner() -> dict[str, Any]:
    """The learner's update on the cuda backend: the kernel runs once per update, and the
    statistic its first step gets (beta = the seed's start, the same as the CPU learner's)."""
    import lda.gibbs.dense_cuda
    import lda.sgmcmc.chain
    from lda.model import StreamingLDA

    calls = []
    kernel = lda.gibbs.dense_cuda.collapsed_gibbs_cuda
    statistics = []
    step = lda.sgmcmc.chain.step  # the dense chain's step

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return kernel(*args, **kwargs)

    def recording(name: str, state: Any, stats: Any, *args: Any) -> Any:
        statistics.append(stats.topic_word.tolist())
        return step(name, state, stats, *args)

    lda.gibbs.dense_cuda.collapsed_gibbs_cuda = counting
    lda.sgmcmc.chain.step = recording  # type: ignore[assignment]
    try:
        model = StreamingLDA(learner_config("cuda"), seed=0)
        start_beta = model.beta.clone()
        batch = Batch.from_ids(LEARNER_DOCS)
        for _ in range(2):
            model.update(batch)
    finally:
        lda.gibbs.dense_cuda.collapsed_gibbs_cuda = kernel
        lda.sgmcmc.chain.step = step
    return {
        "calls": len(calls),
        "theta_shape": list(model.state.theta.shape),
        "theta_finite": bool(torch.isfinite(model.state.theta).all()),
        "docs_seen": model.docs_seen,
        "first_statistic": statistics[0],
        "start_beta": start_beta.tolist(),
    }


def _sim_rng() -> dict[str, Any]:
    from lda.gibbs.dense_cuda import cuda, philox4x32, philox_uniforms

    @cuda.jit
    def known_answer(words, out):  # Philox4x32-10 of (counter, key) = words[0:4], words[4:6]
        r = philox4x32(words[0], words[1], words[2], words[3], words[4], words[5])
        for i in range(4):
            out[i] = r[i]

    answers = []
    for words in (
        (0, 0, 0, 0, 0, 0),
        (0xFFFFFFFF,) * 6,
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0),
    ):
        out = np.zeros(4, dtype=np.uint64)
        known_answer[1, 1](np.array(words, dtype=np.uint64), out)
        answers.append([int(x) for x in out])
    key = (12345, 67890)
    full = philox_uniforms(key, 3, 1200)
    part = philox_uniforms(key, 3, 500, base=700)
    return {
        "known_answers": answers,
        "uniforms": full.ravel().tolist(),
        "shard_slice_equal": bool(np.array_equal(part, full[:, 700:1200])),
    }


SHARD_DOCS = [[0, 1, 2], [3, 3, 4, 5], [5, 0], [2, 2, 1, 0, 4], [1]]


def _sim_shards() -> dict[str, Any]:
    """One learner's minibatch against two ranks' shards of it, from the same generator."""
    beta = tiny_beta()
    full = Batch.from_ids(SHARD_DOCS)
    total = full.n_tokens

    def run(batch: Batch, shard: Shard | None) -> Any:
        g = torch.Generator().manual_seed(21)
        return gibbs_expectations(beta, batch, GibbsConfig(GAMMA, 6, 2, "exact", "cuda"), g, shard)

    whole = run(full, None)
    parts = []
    start = 0
    for docs in (SHARD_DOCS[:2], SHARD_DOCS[2:]):
        batch = Batch.from_ids(docs)
        parts.append(run(batch, Shard(start, total)))
        start += batch.n_tokens
    return {
        "whole_document_topic": whole.document_topic().tolist(),
        "parts_document_topic": torch.cat([p.document_topic() for p in parts]).tolist(),
        "whole_topic_word": whole.topic_word(6).tolist(),
        "parts_topic_word": sum(p.topic_word(6) for p in parts).tolist(),
    }


def _reference(
    beta: np.ndarray,
    words: np.ndarray,
    offsets: np.ndarray,
    z: np.ndarray,
    uniforms: np.ndarray,
    burn_in: int,
    rao_blackwell: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Eq. S.19 one token at a time with the kernel's uniforms: the inverse CDF over k = 0..K-1
    (first running sum > u), kept sweeps summed by document and by word."""
    n_topics, n_words = beta.shape
    z = z.copy()
    document_topic = np.zeros((len(offsets) - 1, n_topics))
    topic_word = np.zeros((n_topics, n_words))
    for d in range(len(offsets) - 1):
        start, end = offsets[d], offsets[d + 1]
        counts = np.bincount(z[start:end], minlength=n_topics).astype(np.float64)
        for s in range(uniforms.shape[0]):
            for j in range(start, end):
                counts[z[j]] -= 1
                weights = (GAMMA + counts) * beta[:, words[j]]
                cdf = np.cumsum(weights)
                k = int(np.searchsorted(cdf, uniforms[s, j] * cdf[-1], side="right"))
                z[j] = k
                counts[k] += 1
                if s >= burn_in:
                    add = weights / cdf[-1] if rao_blackwell else np.eye(n_topics)[k]
                    document_topic[d] += add
                    topic_word[:, words[j]] += add
    return document_topic, topic_word


def _sim_reference() -> dict[str, Any]:
    """The kernel against the sequential reference, draw for draw, at several block sizes (one
    topic per thread, several, idle threads), with an empty and a one-token document; on a
    device also whole warps, with the warp-shuffle scan the simulator cannot run."""
    from lda.gibbs.dense_cuda import Scan, collapsed_gibbs_cuda, philox_uniforms, simulated

    g = torch.Generator().manual_seed(4)
    beta = torch._sample_dirichlet(torch.full((4, 7), 0.4, dtype=torch.float64), generator=g)
    batch = Batch.from_ids([[0, 6, 2], [], [5, 5, 1, 3], [4]])
    z = torch.randint(4, (batch.n_tokens,), generator=g)
    key, sweeps, burn_in = (987654321, 42), 5, 2
    uniforms = philox_uniforms(key, sweeps, batch.n_tokens)
    geometries: list[tuple[Scan, int]] = [("shared", n) for n in (1, 2, 3, 6)]
    if not simulated():
        geometries += [(scan, n) for scan in ("shared", "warp") for n in (32, 64)]
    out: dict[str, Any] = {}
    for method in METHODS:
        rb = method == "rao-blackwell"
        want = _reference(
            beta.numpy(), batch.words.numpy(), batch.offsets.numpy(), z.numpy(), uniforms,
            burn_in, rb,
        )  # fmt: skip
        for scan, threads in geometries:
            topic_word, document_topic = collapsed_gibbs_cuda(
                beta, batch.words, batch.offsets, GAMMA, z, torch.tensor(key), 0, sweeps,
                burn_in, rb, threads=threads, scan=scan,
            )  # fmt: skip
            assert topic_word is not None
            out[f"{method}/{scan}/{threads}"] = max(
                float(np.abs(document_topic.numpy() - want[0]).max()),
                float(np.abs(topic_word.numpy() - want[1]).max()),
            )
    return out


def _sim_api() -> dict[str, Any]:
    """What the cuda path hands out: reduced sums only, and a clear error for the rest."""
    beta, batch = tiny_beta(), Batch.from_ids([[0, 1], [2]])
    out: dict[str, Any] = {}
    config = GibbsConfig(GAMMA, 3, 1, "exact", "cuda")
    result = gibbs_expectations(beta, batch, config, torch.Generator())
    out["document_topic_rows"] = result.document_topic().sum(1).tolist()
    try:
        _ = result.token_topics
        out["token_topics"] = "no error"
    except ValueError as error:
        out["token_topics"] = str(error)
    config = GibbsConfig(GAMMA, 3, 1, "rao-blackwell", "cuda", need_topic_word=False)
    scorer = gibbs_expectations(beta, batch, config, torch.Generator())
    out["scorer_rows"] = scorer.document_topic().sum(1).tolist()
    try:
        scorer.topic_word(6)
        out["topic_word"] = "no error"
    except ValueError as error:
        out["topic_word"] = str(error)
    return out


_SIMULATIONS: dict[str, Callable[[], dict[str, Any]]] = {
    "enumeration": _sim_enumeration,
    "cpu_law": _sim_cpu_law,
    "learner": _sim_learner,
    "rng": _sim_rng,
    "shards": _sim_shards,
    "reference": _sim_reference,
    "api": _sim_api,
}


def _simulate() -> None:
    """The child: every simulation, then one JSON line (results and seconds per simulation)."""
    check_target()
    # The simulator hands control between its threads at every barrier: a short switch
    # interval makes that ~20x faster than Python's default 5 ms.
    sys.setswitchinterval(1e-5)
    torch.set_num_threads(1)
    results: dict[str, Any] = {"seconds": {}}
    for name, run in _SIMULATIONS.items():
        start = time.perf_counter()
        results[name] = run()
        results["seconds"][name] = round(time.perf_counter() - start, 2)
    print(json.dumps(results))


@pytest.fixture(scope="module")
def simulation() -> dict[str, Any]:
    """Every simulated run's results, from one child process with the simulator on (or on the
    device: tests/support/cuda_child.py)."""
    results = simulated(__file__)
    print("simulator seconds:", results["seconds"])
    return results


# ------------------------------------------------------------------------------------------
# The tests


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(ENUMERATION_SWEEPS))
def test_expectations_match_enumeration(simulation, method):
    from tests.lda.gibbs.test_expectations import exact_token_topics

    beta = tiny_beta()
    got = _f64(simulation["enumeration"][method]["document_topic"])
    for d, words in enumerate(ENUMERATION_DOCS):
        truth = exact_token_topics(beta, words, GAMMA).sum(0)
        # Monte Carlo error of E[n_dk] from these chains (measured over 60 seeds with the
        # sequential algorithm): below 0.03 per token at the 99th percentile; dropping n_dk^-j
        # moves the one-token documents by 0.07-0.12 and [0, 1] by 0.15.
        assert torch.allclose(got[d], truth, atol=0.05 * len(words)), (words, got[d], truth)
    topic_word = _f64(simulation["enumeration"][method]["topic_word"])
    counts = torch.bincount(torch.tensor([w for d in ENUMERATION_DOCS for w in d]), minlength=6)
    assert torch.allclose(topic_word.sum(0), counts.to(torch.float64))


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_same_law_as_the_cpu_kernel(simulation, method):
    beta, batch = law_problem()
    config = GibbsConfig(GAMMA, LAW_SWEEPS, LAW_BURN_IN, method, "cpu")
    runs = [
        gibbs_expectations(beta, batch, config, cpu_seed)
        for cpu_seed in (torch.Generator().manual_seed(100 + i) for i in range(LAW_RUNS))
    ]
    for name, values in (
        ("document_topic", torch.stack([r.document_topic() for r in runs])),
        ("topic_word", torch.stack([r.topic_word(10) for r in runs])),
    ):
        got = _f64(simulation["cpu_law"][method][name])
        mean, sd = values.mean(0), values.std(0)
        # One CUDA run is one more draw of the CPU kernel's estimator if the laws agree: its
        # distance to the CPU runs' mean, in standard errors, stays below 5 on every entry
        # (entries the chains never vary, as words no document has, must agree exactly).
        varies = sd > 1e-12
        z = (got - mean).abs()[varies] / (sd[varies] * math.sqrt(1 + 1 / LAW_RUNS))
        assert float(z.max()) < 5.0, (name, float(z.max()))
        torch.testing.assert_close(got[~varies], mean[~varies], rtol=0, atol=1e-9)


@pytest.mark.slow
def test_learner_update_on_the_device_path(simulation):
    from lda.model import StreamingLDA

    result = simulation["learner"]
    assert result["calls"] == 2  # the kernel ran once per update
    assert result["theta_shape"] == [3, 8] and result["theta_finite"]
    assert result["docs_seen"] == 2 * len(LEARNER_DOCS)
    # The first step's statistic against the CPU kernel's law from the same start (a learner
    # of either backend begins at the same theta for the same seed).
    config = learner_config("cpu")
    model = StreamingLDA(config, seed=0)
    torch.testing.assert_close(model.beta, _f64(result["start_beta"]), rtol=0, atol=0)
    batch = Batch.from_ids(LEARNER_DOCS)
    assert config.gamma is not None and config.sweeps is not None
    assert config.burn_in is not None and config.gibbs is not None
    sweeps = GibbsConfig(config.gamma, config.sweeps, config.burn_in, config.gibbs, "cpu")
    runs = torch.stack(
        [
            gibbs_expectations(model.beta, batch, sweeps, seed).topic_word(8)
            for seed in (torch.Generator().manual_seed(200 + i) for i in range(LAW_RUNS))
        ]
    )
    got = _f64(result["first_statistic"])
    mean, sd = runs.mean(0), runs.std(0)
    varies = sd > 1e-12
    z = (got - mean).abs()[varies] / (sd[varies] * math.sqrt(1 + 1 / LAW_RUNS))
    assert float(z.max()) < 5.0, float(z.max())
    torch.testing.assert_close(got[~varies], mean[~varies], rtol=0, atol=1e-9)


@pytest.mark.slow
def test_random_stream(simulation):
    result = simulation["rng"]
    assert result["known_answers"] == [  # Random123's known-answer vectors for Philox4x32-10
        [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8],
        [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD],
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1],
    ]
    u = np.array(result["uniforms"])
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 4 * math.sqrt(1 / 12 / u.size)
    observed = np.histogram(u, bins=20, range=(0.0, 1.0))[0]
    expected = u.size / 20
    chi2 = float(((observed - expected) ** 2 / expected).sum())
    assert chi2 < 50.0, chi2  # chi-square with 19 degrees of freedom: P(> 50) ~ 1e-4
    assert len(np.unique(u)) == u.size
    assert result["shard_slice_equal"]


@pytest.mark.slow
def test_shards_draw_what_one_learner_draws(simulation):
    result = simulation["shards"]
    assert result["parts_document_topic"] == result["whole_document_topic"]
    torch.testing.assert_close(_f64(result["parts_topic_word"]), _f64(result["whole_topic_word"]))


@pytest.mark.slow
def test_kernel_equals_sequential_reference_at_every_block_size(simulation):
    for run, difference in simulation["reference"].items():
        assert difference < 1e-12, (run, difference)


@pytest.mark.slow
def test_cuda_results_hold_reduced_sums_only(simulation):
    result = simulation["api"]
    assert result["document_topic_rows"] == [2.0, 1.0]
    assert result["scorer_rows"] == pytest.approx([2.0, 1.0])
    assert "keeps no per-token" in result["token_topics"]
    assert "not accumulated" in result["topic_word"]


def test_cuda_backend_without_device_or_simulator_says_so():
    from lda.gibbs.dense_cuda import available, simulated

    if available() or simulated():
        pytest.skip("a CUDA device (or the simulator) is present in this process")
    batch = Batch.from_ids([[0, 1]])
    with pytest.raises(RuntimeError, match="NUMBA_ENABLE_CUDASIM"):
        config = GibbsConfig(GAMMA, 2, 1, "exact", "cuda")
        gibbs_expectations(tiny_beta(), batch, config, torch.Generator())


def test_learner_config_checks_the_backend():
    from lda.model import LearnerConfig

    assert LearnerConfig(n_topics=3, n_words=8).gibbs_backend == "auto"
    with pytest.raises(ValueError, match="gibbs_backend"):
        LearnerConfig(n_topics=3, n_words=8, gibbs_backend="gpu")  # type: ignore[arg-type]


def test_a_register_cap_reaches_the_compiler():
    """gpu_gibbs.py --variants times the kernel under register caps (ptxas reports 152-158 per
    thread without): the cap is the dispatcher's compile option, and no cap leaves none."""
    from lda.gibbs import dense_cuda as gibbs_cuda

    if gibbs_cuda.simulated():
        pytest.skip("the simulator compiles nothing")
    capped = gibbs_cuda._build(gibbs_cuda._scan_warp, max_registers=128)
    assert capped.targetoptions["max_registers"] == 128
    assert "max_registers" not in gibbs_cuda._build(gibbs_cuda._scan_warp).targetoptions


@pytest.mark.slow
def test_device_code_compiles_to_ptx(monkeypatch):
    """Both scans, the warp-shuffle one included (it cannot run in the simulator), compile to
    PTX wherever NVVM is installed: for sm_90 (H100) without a GPU, for the GPU if present."""
    from numba import cuda
    from numba.cuda import dispatcher
    from numba.cuda.cudadrv import nvvm

    from lda.gibbs import dense_cuda as gibbs_cuda

    if gibbs_cuda.simulated() or not nvvm.is_available():
        pytest.skip("no NVVM to compile with")
    if cuda.is_available():
        cc = cuda.get_current_device().compute_capability
    else:
        # Device functions compile for the current device's compute capability: name one (the
        # overloads cached meanwhile are for sm_90, and no GPU is here to run them).
        cc = (9, 0)
        device = type("Device", (), {"compute_capability": cc})
        monkeypatch.setattr(dispatcher, "get_current_device", lambda: device)
    signature = gibbs_cuda.kernel_signature()
    for scan in (gibbs_cuda._scan_shared, gibbs_cuda._scan_warp):
        ptx, _ = cuda.compile_ptx(gibbs_cuda._build(scan).py_func, signature, cc=cc)
        assert "atom.shared" in ptx
        assert ("shfl.sync" in ptx) == (scan is gibbs_cuda._scan_warp)


if __name__ == "__main__":
    _simulate()
