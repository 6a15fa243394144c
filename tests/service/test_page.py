"""The page at ``/`` in headless Chromium: the topics table and the plot's points are drawn."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from service.settings import Settings
from tests.service.conftest import Published

CHROMIUM = shutil.which("chromium")
CHROMIUM_TIMEOUT_S = 60
VIRTUAL_TIME_MS = 5000

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)"
)


def dump_dom(url: str, profile: Path) -> str:
    """The DOM after the page's scripts ran, as Chromium serialises it."""
    assert CHROMIUM is not None
    args = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", f"--user-data-dir={profile}",
        f"--virtual-time-budget={VIRTUAL_TIME_MS}", "--dump-dom", url,
    ]  # fmt: skip
    result = subprocess.run(args, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_page_shows_topics_and_plot(published: Published, served: str, tmp_path: Path) -> None:
    # published first: the app reads Redis once before it serves, so the first fetch sees it.
    dom = dump_dom(served, tmp_path / "profile")
    rows = re.findall(r'<tr class="topic">(.*?)</tr>', dom, flags=re.S)
    assert len(rows) == 3, dom[:3000]
    assert "apple banana cherry grape" in rows[0]
    assert "sonata violin cello opera" in rows[2]
    plot = re.search(r'<svg id="plot".*?</svg>', dom, flags=re.S)
    assert plot is not None
    # Three evaluations, each drawn for the sample and the posterior average.
    assert len(re.findall(r"<circle[^>]*class=\"point", plot.group(0))) == 6
    assert plot.group(0).count("<polyline") == 2
    assert "3000 documents seen" in dom


def test_page_says_what_is_missing_before_the_first_update(
    served: str, settings: Settings, tmp_path: Path
) -> None:
    dom = dump_dom(served, tmp_path / "profile")
    assert "no perplexity yet" in dom
    assert "first snapshot" in dom
