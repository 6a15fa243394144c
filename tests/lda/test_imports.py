"""lda.sgmcmc.samplers and the integrators it uses import in any order (no import circle)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "first", ["lda.sgmcmc.sgrhmc_split", "lda.sgmcmc.samplers", "lda.sgmcmc.hyper", "lda.model"]
)
def test_modules_import_on_their_own(first):
    """A fresh interpreter imports each module first without a partially initialised module."""
    code = f"import {first}; from lda.sgmcmc.samplers import Hyper; "
    code += "from lda.sgmcmc.hyper import Hyper as H; "
    code += "assert Hyper is H"
    subprocess.run([sys.executable, "-c", code], check=True)
