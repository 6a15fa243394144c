"""The README's settings table is the one the Settings descriptions generate."""

from __future__ import annotations

from pathlib import Path

from service.settings import settings_table

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_lists_every_setting_as_the_code_defines_it():
    text = README.read_text()
    table = settings_table()
    assert table in text, "README's settings table is stale: paste `python -m service.settings`"
