"""`docker-compose config -q` over a set of compose files: what Compose itself accepts (no
Docker engine runs here; the test is skipped where docker-compose is not installed)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def compose_config(
    files: Sequence[Path], profile: str | None = None
) -> subprocess.CompletedProcess[str]:
    """docker-compose's verdict on ``files`` layered in order, with ``profile`` enabled."""
    tool = shutil.which("docker-compose")
    if tool is None:
        pytest.skip("docker-compose is not installed (apt-get install -y docker-compose)")
    args = [tool, "--project-directory", str(ROOT)]
    for file in files:
        args += ["-f", str(file)]
    if profile:
        args += ["--profile", profile]
    return subprocess.run([*args, "config", "-q"], capture_output=True, text=True, timeout=60)
