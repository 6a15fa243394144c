"""benchmarks/gpu_check.sh before a GPU is at hand: its dry run (every part on the CPU at tiny
sizes, the kernels under numba's CUDA simulator) reaches the end with every part ok and the
fields the summary reads, and a part that fails is reported while the rest still run."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.corpora import CORPORA

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"
PARTS = ["install", "device", "tests", "kernels", "learner", "up"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (CORPORA / "vocab-7702.txt").is_file(), reason="no DEV corpus"),
]


def check(tmp_path: Path, *flags: str, timeout: float = 400) -> list[dict[str, Any]]:
    """Run the script with ``flags``, results under ``tmp_path/out``; its JSON lines."""
    out = tmp_path / "out"
    env = {
        **os.environ,
        "OUT": str(out),
        "PYTHON": sys.executable,
        "STREAMLDA_SHARED": str(CORPORA.parent),
    }
    # An empty bundle folder: the data come from the shared corpora, nothing is installed.
    flags = ("--dry-run", "--bundle", str(tmp_path / "bundle"), *flags)
    run = subprocess.run(
        ["bash", str(SCRIPT), *flags], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (out / "summary.txt").read_text() in run.stdout
    return [json.loads(line) for line in (out / "gpu_check.jsonl").read_text().splitlines()]


def of(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["kind"] == kind]


def test_dry_run_reaches_the_end_with_every_part_ok(tmp_path: Path) -> None:
    records = check(tmp_path)
    statuses = of(records, "part")
    assert [s["part"] for s in statuses] == PARTS
    assert all(s["ok"] and s["seconds"] <= s["limit_s"] for s in statuses), statuses
    (end,) = of(records, "summary")
    assert end["parts_failed"] == [] and end["parts_ok"] == PARTS and end["mode"] == "dry-run"

    (device,) = of(records, "device")
    assert device["simulator"] is True
    assert {"name", "driver", "torch", "torch_cuda", "numba", "numba_cuda", "nvvm"} <= set(device)
    (tests,) = of(records, "tests")
    assert tests["on"] == "simulator" and tests["passed"] > 10 and tests["failed"] == 0

    kernels = of(records, "kernel")
    cells = {(k["words"], k["topics"], k["kernel"], k["backend"], k["docs"]) for k in kernels}
    assert cells == {
        (w, 4, kernel, backend, docs)
        for w in (7702, 300)
        for kernel in ("dense", "sparse")
        for backend, docs in (("cpu", 3), ("cuda", 3), ("cuda", 6))
    }
    for k in kernels:
        assert k["ns_per_token_sweep"] > 0 and k["ms_per_minibatch"] > 0 and k["tokens"] > 0
        assert k["peak_mib"] is None  # no CUDA device: torch has no peak to report

    learners = of(records, "learner")
    # the device's runs in the CUDA kernel (the simulator's), the CPU's in the CPU's
    assert [(r["topics"], set(r["gibbs"])) for r in learners] == [
        (4, {"dense_cuda"}), (4, {"dense"}), (6, {"dense_cuda"}), (6, {"dense"}),
    ]  # fmt: skip
    for r in learners:
        assert r["docs"] > 0 and r["docs_per_s"] > 0 and math.isfinite(r["perplexity"])
        assert r["checkpoints"][-1] == {"docs": r["docs"], "perplexity": r["perplexity"]}
    device_run, cpu_run = learners[0], learners[1]
    # the device's run is scored where the CPU's stops, so the two compare at one count
    assert cpu_run["docs"] in [p["docs"] for p in device_run["checkpoints"]]

    (up,) = of(records, "up")
    assert up["device"] == "cpu" and up["docs_seen"] > 0 and up["worker_docs_per_s"] > 0
    assert up["topics_served"] == 5 and up["window_s"] > 0


def test_a_failed_part_is_reported_and_the_rest_still_run(tmp_path: Path) -> None:
    records = check(tmp_path, "--parts", "kernels,device", "--data", str(tmp_path / "none"))
    kernels, device = of(records, "part")
    assert not kernels["ok"] and kernels["error"] == "exit 1"
    assert "vocab-7702.txt" in kernels["output_tail"]  # what went wrong, from its output
    assert device["ok"]
    (end,) = of(records, "summary")
    assert end["parts_failed"] == ["kernels"]
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert "FAILED: kernels" in summary.splitlines()[0]
