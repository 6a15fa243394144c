"""docs/settings.md's tables are the ones the Settings descriptions generate, a section per group,
and the docs name no STREAMLDA_ variable that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

from service.settings import GROUP_OF, settings_table

REPO = Path(__file__).resolve().parents[2]
SETTINGS_DOC = REPO / "docs" / "settings.md"
SECTION = "## Every setting"


def documented_tables(text: str) -> str:
    """What follows SECTION's introduction: from its first group's heading to the end."""
    every = text[text.index(SECTION) :]
    return every[every.index("\n### ") :].strip()


def test_settings_doc_lists_every_setting_as_the_code_defines_it():
    text = SETTINGS_DOC.read_text()
    assert SECTION in text, "docs/settings.md has no section of every setting"
    assert documented_tables(text) == settings_table(), (
        "docs/settings.md's settings tables are stale: paste `python -m service.settings`"
    )


def test_docs_name_only_variables_that_exist():
    """Every STREAMLDA_ name in the README and docs/ is a setting or a variable the compose
    files, their script (make compose-up) or the tests read: a renamed setting cannot linger in
    the prose."""
    known = {f"STREAMLDA_{name.upper()}" for name in GROUP_OF}
    scripts = [*REPO.glob("docker-compose*.yml"), *(REPO / "deploy" / "compose").glob("*.*")]
    for compose in scripts:
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
