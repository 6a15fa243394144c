"""Keeps the benchmark scripts from rotting: ultra-quick runs of their main functions."""

from __future__ import annotations

import gzip
import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import (
    common,
    cost,
    gibbs_kernel,
    hostile_input,
    learner,
    peers,
    ptx_report,
    seeds,
    sgrhmc_integrator,
    streamlda_runs,
)
from benchmarks.live_measure import arrival_times, waits
from benchmarks.live_up import Poll
from lda.batch import Batch
from service.learn.reservoir import Reservoir
from tests.support.corpora import CORPORA

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpora"


@pytest.mark.slow
@pytest.mark.skipif(not (CORPUS / "vocab-7702.txt").is_file(), reason="DEV corpus not present")
def test_benchmark_runs_end_to_end(tmp_path: Path) -> None:
    """100 documents, K=5, 4 sweeps, two samplers, no peers: table, targets and JSON."""
    out = tmp_path / "bench.json"
    result = learner.main(
        [
            "--corpus-dir", str(CORPUS),
            "--docs", "100", "--heldout", "20", "--topics", "5", "--batch-size", "25",
            "--streamlda-batch-size", "25",
            "--sweeps", "4", "--eval-sweeps", "4", "--samplers", "sgrld,sgrhmc",
            "--checkpoints", "50,100", "--no-gensim", "--no-sklearn", "--no-tomotopy",
            "--threads", "1", "--max-tokens", "200",
            "--json", str(out),
        ]
    )  # fmt: skip
    assert json.loads(out.read_text())["corpus"]["train_docs"] == 100
    assert [r["name"] for r in result["runs"]] == ["sgrld", "sgrhmc"]
    for run in result["runs"]:
        assert run["error"] is None
        assert [p["docs"] for p in run["points"]] == [50, 100]
        for point in run["points"]:
            assert point["tokens_per_s"] > 0 and point["train_s"] > 0
            assert 1 < point["perplexity"] < 7702 * 2 and math.isfinite(point["perplexity_avg"])
    assert set(result["targets"]) == {"sgrld", "sgrhmc"}


@pytest.mark.skipif(not (CORPUS / "vocab-7702.txt").is_file(), reason="DEV corpus not present")
def test_benchmark_runs_peers_variants_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """scikit-learn, tomotopy, a --runs variant and --plot on 100 documents: every system in the
    time-to-quality table, a PNG written, tomotopy's curve scored every 5 iterations."""
    pytest.importorskip("sklearn", reason="scikit-learn is in the dev extra")
    pytest.importorskip("tomotopy", reason="tomotopy is in the dev extra")
    pytest.importorskip("matplotlib", reason="matplotlib is in the dev extra")
    plot = tmp_path / "bench.png"
    result = learner.main(
        [
            "--corpus-dir", str(CORPUS),
            "--docs", "100", "--heldout", "20", "--topics", "5", "--batch-size", "25",
            "--streamlda-batch-size", "25",
            "--sweeps", "4", "--eval-sweeps", "4", "--checkpoints", "50,100", "--no-gensim",
            "--runs", "sgrld,sgrld:sweeps=2:mean_decay=0.5", "--tomotopy-iters", "5,10",
            "--tomotopy-every", "5", "--threads", "1", "--max-tokens", "200",
            # 100 documents told they sample English Wikipedia (the default N, 6.9 million)
            # leave the 4-step sample far off; this run checks the machinery at a small N
            "--corpus-size", "10000",
            "--plot", str(plot),
        ]
    )  # fmt: skip
    systems = ["sklearn", "tomotopy-5", "tomotopy-10", "sgrld", "sgrld:sweeps=2:mean_decay=0.5"]
    assert [r["name"] for r in result["runs"]] == systems
    assert [row["system"] for row in result["time_to_quality"]] == systems
    table = capsys.readouterr().out.split("time to quality")[1].split("targets")[0]
    assert all(f"\n{name} " in table for name in systems)
    assert plot.stat().st_size > 1000 and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for run in result["runs"]:
        assert [p["docs"] for p in run["points"]] == [50, 100], run["name"]
        for point in run["points"]:
            assert 1 < point["perplexity"] < 7702 * 2 and point["train_s"] > 0
            assert (point["perplexity_mean"] is None) == (run["family"] != "streamlda")
    variant = result["runs"][-1]["settings"]
    assert (variant["sweeps"], variant["burn_in"], variant["mean_decay"]) == (2, 1, 0.5)
    assert [p["iterations"] for p in result["runs"][2]["curve"]] == [5, 10]
    assert result["time_to_quality"][1]["ns_per_token_sweep"] > 0
    assert result["time_to_quality"][0]["ns_per_token_sweep"] is None  # VB sweeps no tokens
    assert set(result["targets"]) == {"sgrld", "sgrld:sweeps=2:mean_decay=0.5"}


def test_tomotopy_beta_covers_every_word_in_our_order() -> None:
    """tomotopy's topics over all W of our words: rows sum to 1, unseen words get
    eta / (n_k + W eta), seen words keep tomotopy's own distribution (renormalised)."""
    pytest.importorskip("tomotopy", reason="tomotopy is in the dev extra")
    words = [f"word{i}" for i in range(12)]
    generator = torch.Generator().manual_seed(0)
    documents = [torch.randint(0, 8, (30,), generator=generator).tolist() for _ in range(20)]
    documents[0] += [10, 10, 10]  # ids 8, 9 and 11 never occur; 10 is rare
    model = peers.tomotopy_lda(documents, words, n_topics=3, seed=1)
    peers.tomotopy_train(model, 20, workers=1)
    beta = peers.tomotopy_beta(model, {w: i for i, w in enumerate(words)}, len(words))

    assert beta.shape == (3, 12) and torch.allclose(beta.sum(dim=1), torch.ones(3).double())
    seen = [words.index(w) for w in model.used_vocabs]
    assert sorted(seen) == [0, 1, 2, 3, 4, 5, 6, 7, 10]
    n_k = torch.tensor(model.get_count_by_topics(), dtype=torch.float64)
    unseen = beta[:, [8, 9, 11]]
    assert torch.allclose(unseen, (model.eta / (n_k + 12 * model.eta))[:, None].expand(3, 3))
    for k in range(3):
        own = torch.tensor(model.get_topic_word_dist(k), dtype=torch.float64)  # used_vocabs order
        ours = beta[k, seen] / beta[k, seen].sum()
        assert torch.allclose(ours, own, rtol=1e-5)
        raw = torch.tensor(model.get_topic_word_dist(k, normalize=False), dtype=torch.float64)
        assert torch.allclose(raw.sum(), n_k[k] + len(seen) * model.eta, rtol=1e-5)  # n_kw + eta


@pytest.mark.parametrize("check", ["gamma", "row"])
def test_sgrhmc_integrator_checks_run(check: str, capsys: pytest.CaptureFixture[str]) -> None:
    sgrhmc_integrator.main([check, "--chains", "200", "--steps", "40", "--alpha", "0.3"])
    assert "truth" in capsys.readouterr().out


@pytest.mark.skipif(not (CORPUS / "vocab-7702.txt").is_file(), reason="DEV corpus not present")
def test_gibbs_kernel_timing_runs(capsys: pytest.CaptureFixture[str]) -> None:
    gibbs_kernel.main(
        ["--corpus-dir", str(CORPUS), "--threads", "1", "--warm", "50", "--batches", "1",
         "--rounds", "1", "--sweeps", "4"]
    )  # fmt: skip
    assert "ns per token-sweep" in capsys.readouterr().out


def test_run_configs_are_the_services_and_ignore_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """make_config maps the command line through the service's learner_config: a spec's fields
    win over the command line's (dtype too), --step-size is a constant eps, and STREAMLDA_*
    variables meant for the service do not leak into a benchmark run."""
    monkeypatch.setenv("STREAMLDA_MEAN_DECAY", "0.5")
    monkeypatch.setenv("STREAMLDA_BURN_IN", "999")
    args = learner.parse_args(["--quick", "--step-size", "0.01"])
    spec = streamlda_runs.parse_run_spec("sgrld:dtype=float32:sweeps=8")
    config = streamlda_runs.make_config(args, spec, 30)
    assert config.dtype == "float32" and config.sweeps == 8 and config.burn_in == 4
    assert config.mean_decay == 0.97  # the learner's default, not the environment's
    assert config.schedule is not None and config.schedule(0) == config.schedule(10_000) == 0.01


@pytest.mark.skipif(not (CORPUS / "vocab-7702.txt").is_file(), reason="DEV corpus not present")
def test_benchmark_repeats_the_stream_and_runs_on_the_named_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--repeat cycles a stream longer than the corpus (here one capped by a tiny corpus folder),
    a run spec's device is where its learner runs (the CPU here; a GPU run is named so and
    reports its peak memory), and a CUDA run asked for without a GPU fails before any work."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "vocab-7702.txt").write_text((CORPUS / "vocab-7702.txt").read_text())
    with (
        gzip.open(CORPUS / "dev-00.jsonl.gz", "rt") as src,
        gzip.open(folder / "dev-00.jsonl.gz", "wt") as dst,
    ):
        dst.writelines(line for _, line in zip(range(40), src, strict=False))
    argv = [
        "--corpus-dir", str(folder),
        "--docs", "100", "--heldout", "10", "--topics", "4", "--batch-size", "25",
        "--streamlda-batch-size", "25", "--sweeps", "2", "--eval-sweeps", "2",
        "--checkpoints", "50,100", "--no-gensim", "--no-sklearn", "--no-tomotopy",
        "--threads", "1", "--max-tokens", "100", "--runs", "sgrld:device=cpu",
    ]  # fmt: skip
    result = learner.main([*argv, "--repeat"])
    assert result["corpus"]["train_docs"] == 100  # 30 distinct documents, cycled
    assert common.repeated([[1], [2, 3]], 5) == [[1], [2, 3], [1], [2, 3], [1]]
    (run,) = result["runs"]
    assert run["device"] == "cpu" and run["gpu_peak_mib"] is None
    assert [p["docs"] for p in run["points"]] == [50, 100]
    assert learner.main(argv)["corpus"]["train_docs"] == 30  # without --repeat: what there is
    capsys.readouterr()
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit):
            learner.parse_args([*argv[:-1], "sgrld", "--device", "cuda"])
        assert "no CUDA device" in capsys.readouterr().err
        with pytest.raises(SystemExit):
            learner.parse_args([*argv[:-1], "sgrld", "--device", "cuda:1"])
        assert "device cuda:1 was asked for" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        learner.parse_args([*argv[:-1], "sgrld:device=gpu"])


def test_a_run_spec_revisits_as_the_worker_does() -> None:
    """``revisit=R`` and ``revisit_step=S`` are the run's revisits, not LearnerConfig fields;
    documents go through the worker's reservoir and come back as they went in."""
    spec = streamlda_runs.parse_run_spec("scir:revisit=6:revisit_step=0.5:sweeps=3")
    assert (spec.revisit, spec.revisit_step, spec.overrides) == (6.0, 0.5, {"sweeps": 3})
    assert streamlda_runs.parse_run_spec("scir").revisit == 0.0
    with pytest.raises(ValueError, match="revisit must not be negative"):
        streamlda_runs.parse_run_spec("scir:revisit=-1")
    reservoir = Reservoir(None, "test", 10, seed=0)
    documents = [[3, 1, 4], [1, 5], [9, 2, 6, 5]]
    streamlda_runs.offer(reservoir, Batch.from_ids(documents))
    drawn = streamlda_runs.draw(reservoir, 3)
    ids = drawn.words.tolist()
    offsets = drawn.offsets.tolist()
    again = sorted(ids[a:b] for a, b in itertools.pairwise(offsets))
    assert again == sorted(documents)


@pytest.mark.skipif(not (CORPUS / "vocab-7702.txt").is_file(), reason="DEV corpus not present")
def test_seeds_benchmark_runs_seeded_unseeded_and_mid_stream(tmp_path: Path) -> None:
    """300 documents: an unseeded run, a seeded one and one seeded mid-stream, each scored, with
    each theme's words counted in its topic's top words (the mid-stream one after its seeds)."""
    out = tmp_path / "seeds.json"
    result = seeds.main(
        [
            "--corpus-dir", str(CORPUS), "--docs", "300", "--heldout", "20", "--topics", "5",
            "--eval-sweeps", "4", "--strengths", "1", "--mid-at", "100", "--every", "100",
            "--threads", "1", "--json", str(out),
        ]
    )  # fmt: skip
    assert json.loads(out.read_text())["train_docs"] == 300
    unseeded, seeded, mid = result["results"]
    assert unseeded["strength"] is None and seeded["seeded_at"] == 0 and mid["seeded_at"] == 100
    assert seeded["pseudo_counts"] > 0
    themes = list(result["themes"])
    for run in (unseeded, seeded, mid):
        assert run["perplexity"] > 1 and math.isfinite(run["npmi"])
        assert list(run["held"]) == themes
        assert all(0 <= count <= 5 for _, count in run["held"].values())
    assert [topic for topic, _ in seeded["held"].values()] == list(range(len(themes)))
    assert sorted(mid["trace"]) == [200, 300] and not unseeded["trace"]


@pytest.mark.slow
def test_ptx_report_reads_the_kernels_registers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both scans compile for sm_90 and ptxas reports their registers; a cap of 64 holds and
    spills (the cuda extra, in dev, ships ptxas)."""
    from numba.cuda import dispatcher

    # the report names a compute capability for numba's device functions: undo it afterwards
    monkeypatch.setattr(dispatcher, "get_current_device", dispatcher.get_current_device)
    ptx_report.main(["--caps", "64"])
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    expected = [(scan, cap) for scan in ("shared", "warp") for cap in ("-", "64")]
    assert [(r[0], r[1]) for r in rows] == expected
    for scan in (rows[:2], rows[2:]):
        free, capped = (int(r[2]) for r in scan)
        assert 64 < free <= 255 and capped == 64
        assert int(scan[1][3]) > 0  # capped at 64, it spills


@pytest.mark.slow
@pytest.mark.skipif(not (CORPUS / "vocab-7702.txt").is_file(), reason="DEV corpus not present")
def test_cost_grid_runs_each_cell_in_its_own_process(tmp_path):
    """benchmarks/cost.py: a row per system and cell, each with docs/s and its peak memory."""
    pytest.importorskip("tomotopy", reason="tomotopy is in the dev extra")
    rows = cost.main(
        [
            "--corpus-dir", str(CORPUS), "--topics", "4", "--words", "300", "--runs", "scir",
            "--peers", "tomotopy", "--docs", "60", "--heldout", "10", "--vocab-docs", "100",
            "--batch-size", "20", "--tomotopy-iters", "2", "--threads", "1",
            "--json", str(tmp_path / "cost.json"),
        ]
    )  # fmt: skip
    assert [(r["system"], r["K"], r["W"]) for r in rows] == [
        ("scir", 4, 300),
        ("tomotopy (1 workers)", 4, 300),
    ]
    assert all(r["docs_per_s"] > 0 and r["peak_rss_gib"] > 0 for r in rows)
    assert rows[0]["perplexity"] > 1 and rows[0]["gibbs_ns_per_token_sweep"] > 0


@pytest.mark.slow
@pytest.mark.skipif(not (CORPORA / "dev-00.jsonl.gz").is_file(), reason="no DEV corpus")
def test_live_benchmark_runs_up_with_and_without_revisits(tmp_path: Path) -> None:
    """benchmarks/live.py --quick: ``up`` twice (revisits on, off) and tomotopy twice, every
    row of the table with a finite held-out perplexity, off's ratio to itself 1."""
    pytest.importorskip("tomotopy", reason="tomotopy is in the dev extra")
    out = tmp_path / "live.json"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.live", "--quick", "--rates", "200",
         "--corpus-dir", str(CORPORA), "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["rate", "system"])
    rows = lines[header + 1 :]
    systems = ["revisit on", "revisit off", "tomotopy-10", "tomotopy-20"]
    assert [line[6:20].strip() for line in rows] == systems  # 5 characters of rate, 14 of system
    for line in rows:
        perplexity = float(line[20:].split()[0])
        assert math.isfinite(perplexity) and 1 < perplexity < 5_000 * 2, line
    result = json.loads(out.read_text())
    assert [r["system"] for r in result["rows"]] == systems
    assert result["rows"][1]["over_off"] == 1.0
    assert result["corpus"]["heldout_docs"] == 100 and result["corpus"]["words"] == 5_000


def test_live_benchmark_times_each_article_from_queued_to_placed() -> None:
    """Arrivals from the scraper's counters (a missed publication's batches spread evenly) and
    waits to the first snapshot counting each article, once the worker has caught up."""

    def poll(at: float, snapshot: float | None, placed: int, queued: int) -> object:
        batches = queued // 2  # published at t = batches
        return Poll(at, snapshot, placed, placed, 0, 0.0, 0.0, queued, batches, batches, None)

    # batches of 2 articles queued at t = 1, 2, 3, 4; the poll at 3 missed the batch at t = 2
    polls = [poll(1.0, 1.5, 2, 2), poll(3.0, 3.5, 6, 6), poll(4.0, 4.5, 8, 8)]
    assert arrival_times(polls, started=0.0) == [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0]
    measured = waits(polls, started=0.0, expected=8)
    assert measured.caught_up and measured.since == 1.5  # every article queued by then placed
    assert measured.seconds == [1.5, 1.5, 0.5, 0.5, 0.5, 0.5]


@pytest.mark.slow
def test_hostile_input_benchmark_sweeps_search_reads(capsys: pytest.CaptureFixture[str]) -> None:
    """benchmarks/hostile_input.py --only search: a real API process, 5,000 distinct pages,
    every answer a 200 and the growth of its resident set printed against its goal."""
    assert hostile_input.main(["--only", "search"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("search:"))
    assert "(0 not 200)" in line and "resident set grew" in line, line
