"""Commands that need no maths load none: the settings, ``streamlda scrape`` and ``streamlda
export`` import no torch, numba or FastAPI (a scraper host should not pay for them at every
start, nor an export that only reads Redis and writes files)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

HEAVY = ("torch", "numba", "fastapi")

PROBE = """
import sys
{body}
print("loaded:" + ",".join(m for m in {heavy!r} if m in sys.modules))
"""


def _loaded(body: str) -> str:
    code = PROBE.format(body=body, heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1].removeprefix("loaded:")


def test_settings_import_no_torch():
    assert _loaded("import service.settings; service.settings.Settings()") == ""


def _main(argv: list[str]) -> str:
    return f"""
from service.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
"""


@pytest.mark.parametrize("argv", [["scrape", "--help"], ["scrape", "--source", "nowhere:x"]])
def test_scrape_imports_no_torch(argv):
    assert _loaded(_main(argv)) == ""


def test_the_other_commands_still_register_and_load_what_they_need():
    assert "torch" in _loaded(_main(["worker", "--help"]))


def test_export_imports_no_torch():
    unreachable = ["export", "--redis", "redis://127.0.0.1:1/0", "--out", "never-written"]
    assert _loaded(_main(unreachable)) == ""
