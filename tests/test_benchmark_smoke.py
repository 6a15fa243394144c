"""Keeps the benchmark scripts from rotting: ultra-quick runs of their main functions."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "learner.py"
CORPUS = SCRIPT.parent.parent.parent / "shared" / "corpora"


def _load_benchmark(script: Path = SCRIPT) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not (CORPUS / "vocab-7702.txt").is_file(), reason="DEV corpus not present")
def test_benchmark_runs_end_to_end(tmp_path: Path) -> None:
    """100 documents, K=5, 4 sweeps, two samplers, no gensim: table, targets and JSON."""
    out = tmp_path / "bench.json"
    result = _load_benchmark().main(
        [
            "--corpus-dir", str(CORPUS),
            "--docs", "100", "--heldout", "20", "--topics", "5", "--batch-size", "25",
            "--sweeps", "4", "--eval-sweeps", "4", "--samplers", "sgrld,sgrhmc",
            "--checkpoints", "50,100", "--no-gensim", "--threads", "1", "--max-tokens", "200",
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


@pytest.mark.parametrize("check", ["gamma", "row"])
def test_sgrhmc_integrator_checks_run(check: str, capsys: pytest.CaptureFixture[str]) -> None:
    script = SCRIPT.parent / "sgrhmc_integrator.py"
    _load_benchmark(script).main([check, "--chains", "200", "--steps", "40", "--alpha", "0.3"])
    assert "truth" in capsys.readouterr().out


@pytest.mark.skipif(not (CORPUS / "vocab-7702.txt").is_file(), reason="DEV corpus not present")
def test_gibbs_kernel_timing_runs(capsys: pytest.CaptureFixture[str]) -> None:
    script = SCRIPT.parent / "gibbs_kernel.py"
    _load_benchmark(script).main(
        ["--corpus-dir", str(CORPUS), "--threads", "1", "--warm", "50", "--batches", "1",
         "--rounds", "1", "--sweeps", "4"]
    )  # fmt: skip
    assert "ns per token-sweep" in capsys.readouterr().out
