"""lda.samplers and the integrators it uses import in any order (no import circle)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("first", ["lda.sgrhmc_split", "lda.samplers", "lda.hyper", "lda.model"])
def test_modules_import_on_their_own(first):
    """A fresh interpreter imports each module first without a partially initialised module."""
    code = f"import {first}; from lda.samplers import Hyper; from lda.hyper import Hyper as H; "
    code += "assert Hyper is H"
    subprocess.run([sys.executable, "-c", code], check=True)
