"""docs/settings.md's table is the one the Settings descriptions generate, and the docs name no
STREAMLDA_ variable that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

from service.settings import Settings, settings_table

REPO = Path(__file__).resolve().parents[2]
SETTINGS_DOC = REPO / "docs" / "settings.md"
HEADER = "| environment variable | default | meaning |"


def documented_table(text: str) -> str:
    """The table that starts at HEADER: its consecutive lines that start with '|'."""
    lines = text.splitlines()
    start = lines.index(HEADER)
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[start:end])


def test_settings_doc_lists_every_setting_as_the_code_defines_it():
    text = SETTINGS_DOC.read_text()
    assert HEADER in text.splitlines(), "docs/settings.md has no settings table"
    assert documented_table(text) == settings_table(), (
        "docs/settings.md's settings table is stale: paste `python -m service.settings`"
    )


def test_docs_name_only_variables_that_exist():
    """Every STREAMLDA_ name in the README and docs/ is a setting or a variable the compose
    files or the tests read: a renamed setting cannot linger in the prose."""
    known = {f"STREAMLDA_{name.upper()}" for name in Settings.model_fields}
    for compose in REPO.glob("docker-compose*.yml"):
        known |= set(re.findall(r"\$\{(STREAMLDA_[A-Z0-9_]+)", compose.read_text()))
    for support in ("corpora.py", "cuda_child.py"):  # STREAMLDA_SHARED, STREAMLDA_CUDA_TESTS
        text = (REPO / "tests" / "support" / support).read_text()
        known |= set(re.findall(r"\"(STREAMLDA_[A-Z0-9_]+)\"", text))
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    unknown = {
        f"{doc.relative_to(REPO)}: {name}"
        for doc in docs
        for name in re.findall(r"STREAMLDA_[A-Z0-9_]*[A-Z0-9]", doc.read_text())
        if name not in known
    }
    assert not unknown, f"not a setting nor a compose or test variable: {sorted(unknown)}"
