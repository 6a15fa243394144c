"""A setting is declared once: its type, default, variable, flag and help in its group, from which
the commands' flags, docs/settings.md and the learner's configuration are made. Adding a learner
setting touches its declaration and its generated docs line, nothing else of the service."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field
from pydantic_settings import EnvSettingsSource

from lda.config import Kernel, LearnerConfig
from service.cli import COMMANDS, build_parser
from service.settings import FLAGS, GROUP_OF, PREFIX, settings_table
from service.settings_learning import Flag, ModelSettings

REPO = Path(__file__).resolve().parents[2]
# The learner's settings that mean nothing else in the service: each is its declaration, its
# docs line and the learner's field of the same name, which reads it.
LEARNER_ONLY = [
    "alpha",
    "friction",
    "corpus_growth",
    "burn_in",
    "gibbs",
    "gibbs_backend",
    "eval_sweeps",
    "eval_gibbs",
]
DECLARATION = "service/settings_learning.py"


def places(name: str) -> set[str]:
    """Every file of the service's code and of docs/ that names the setting: its name, its
    variable or its flag."""
    named = re.compile(rf"\b{name}\b|--{name.replace('_', '-')}\b|{PREFIX}{name.upper()}\b")
    files = [*(REPO / "service").rglob("*.py"), REPO / "docs" / "settings.md"]
    return {str(f.relative_to(REPO)) for f in files if named.search(f.read_text())}


@pytest.mark.parametrize("name", LEARNER_ONLY)
def test_a_learner_setting_is_named_in_its_declaration_and_its_docs_line_only(name: str) -> None:
    assert places(name) == {DECLARATION, "docs/settings.md"}
    rows = [row for row in settings_table().splitlines() if f"`{PREFIX}{name.upper()}`" in row]
    assert len(rows) == 1  # its generated line
    assert name in {f.name for f in fields(LearnerConfig)}  # where it is read


def test_the_session_takes_the_settings_themselves() -> None:
    """No mirror of the model's settings: the session takes the validated group."""
    assert not (REPO / "service" / "learn" / "session_config.py").exists()
    text = (REPO / "service" / "learn" / "session.py").read_text()
    assert "config: ModelSettings" in text


class WithKernel(ModelSettings):
    """The model's settings as they would be with one more learner setting declared."""

    gibbs_kernel: Annotated[Kernel, Flag("--gibbs-kernel", "collapsed Gibbs kernel")] = Field(
        default="auto", description="The collapsed Gibbs kernel: auto, dense or sparse"
    )


def test_a_new_learner_setting_reaches_the_learner_from_its_declaration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Declared, a LearnerConfig field's setting is read from its variable and carried to the
    learner by its name, with nothing else written."""
    monkeypatch.setenv("STREAMLDA_GIBBS_KERNEL", "sparse")
    read = EnvSettingsSource(WithKernel, env_prefix=PREFIX)()  # type: ignore[arg-type]
    settings = WithKernel(**read)
    assert settings.learner_config(n_words=10).gibbs_kernel == "sparse"
    assert ModelSettings().learner_config(n_words=10).gibbs_kernel == "auto"


def test_every_flag_of_a_setting_is_its_declared_flag() -> None:
    """Each command's flags that set a setting are the ones the settings declare for it, with
    their help: no command adds one by hand."""
    for name, flag in FLAGS:
        assert set(flag.commands) <= COMMANDS.keys(), f"{name}: no command {flag.commands}"
    for command in COMMANDS:
        parser = build_parser(command)
        commands = next(a for a in parser._actions if a.dest == "command")
        sub = commands.choices[command]  # type: ignore[index]
        found = {
            (action.dest, option, action.help)
            for action in sub._actions
            if action.dest in GROUP_OF
            for option in action.option_strings
        }
        declared = {
            (name, option, flag.help)
            for name, flag in FLAGS
            if command in flag.commands
            for option in _options(name, flag.name)
        }
        assert found == declared, command


def _options(name: str, option: str) -> tuple[str, ...]:
    """A setting's flag, and for a bool its negation too."""
    default = ModelSettings.model_fields.get(name)
    switch = default is not None and default.annotation is bool
    return (option, f"--no-{option[2:]}") if switch else (option,)


def test_a_switch_turns_a_true_default_off_and_a_false_one_on() -> None:
    """``--no-fixed-gamma`` learns gamma although the default keeps it fixed; unset, the
    environment's value stands."""
    from service.settings import flag_values

    parser = build_parser("train")
    train = ["train", "--source", "x", "--docs", "1", "--out", "o"]
    off = vars(parser.parse_args([*train, "--no-fixed-gamma"]))
    assert flag_values(off)["fixed_gamma"] is False
    on = vars(parser.parse_args([*train, "--fixed-topics"]))
    assert flag_values(on)["fixed_topics"] is True
    assert "fixed_gamma" not in flag_values(vars(parser.parse_args(train)))
