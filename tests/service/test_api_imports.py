"""An API process imports no torch and none of the learner: its model is a numpy array and its
kernels are its own (torch alone was ~0.25 GB of each API process's memory)."""

from __future__ import annotations

import json
import subprocess
import sys


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
    assert set(loaded) <= {"lda", "lda.config", "lda.hyper", "lda.schedules"}, loaded
