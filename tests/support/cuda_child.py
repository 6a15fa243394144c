"""Where the CUDA kernels' tests run their child process: numba's CUDA simulator by default, or
the GPU itself when ``STREAMLDA_CUDA_TESTS=device`` (the GPU check's tests part,
benchmarks/gpu_setup.py, sets it on a GPU machine), so the same tests judge the kernels on a
real device.

numba reads NUMBA_ENABLE_CUDASIM once, when it is first imported, so the choice is made in the
child's environment, not in the pytest process.
"""

from __future__ import annotations

import os
from pathlib import Path

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
