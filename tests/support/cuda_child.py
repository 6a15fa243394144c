"""Where the CUDA kernels' tests run their child process: numba's CUDA simulator by default, or
the GPU itself when ``STREAMLDA_CUDA_TESTS=device`` (the GPU check's tests part,
benchmarks/gpu_setup.py, sets it on a GPU machine), so the same tests judge the kernels on a
real device.

numba reads NUMBA_ENABLE_CUDASIM once, when it is first imported, so the choice is made in the
child's environment, not in the pytest process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ON_DEVICE = os.environ.get("STREAMLDA_CUDA_TESTS") == "device"


def child_env(root: Path) -> dict[str, str]:
    """The child's environment: the simulator switched on, or off for the device; ``root``
    importable."""
    env = dict(os.environ)
    if ON_DEVICE:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    else:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    return env


def check_target() -> None:
    """In the child: fail at once unless the kernels will run where the parent asked."""
    from lda.gibbs.dense_cuda import available, simulated

    if ON_DEVICE:
        assert not simulated() and available(), (
            "STREAMLDA_CUDA_TESTS=device, but numba has no CUDA device to compile for "
            "(no driver, no GPU or no NVVM)"
        )
    else:
        assert simulated(), "run with NUMBA_ENABLE_CUDASIM=1"


def simulated(script: str) -> dict[str, Any]:
    """Run a test file as the child (``script``: its ``__file__``) and read the JSON object it
    prints last: every simulated run's results; the test fails with the child's error."""
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, script],
        env=child_env(root),
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        pytest.fail(f"the simulated runs failed:\n{run.stderr[-4000:]}")
    results: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return results
