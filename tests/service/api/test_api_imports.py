"""An API process imports no torch and none of the learner: its model is a numpy array and
/infer's kernels are lda's torch-free twins (torch alone is a quarter of a GB per process)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.test_layers import TORCH_FREE

pytestmark = pytest.mark.slow


def test_the_api_process_imports_no_torch_and_no_learner() -> None:
    probe = (
        "import json, sys\n"
        "import service.api.command, service.api.app\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'torch' or m.startswith('lda'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert "torch" not in loaded
    packages = {"lda", "lda.sgmcmc", "lda.shaping"}
    torch_free = {*packages, "lda.sgmcmc.hyper", "lda.sgmcmc.schedules", *TORCH_FREE}
    assert set(loaded) <= torch_free, loaded
