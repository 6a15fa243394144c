"""Grouping the settings renamed nothing: every STREAMLDA_ variable that docs/settings.md lists
still sets its setting, and every flag that set a setting still does."""

from __future__ import annotations

import json
import re
import types
import typing
from pathlib import Path
from typing import Any

import annotated_types
import pytest
from pydantic.fields import FieldInfo

from service.cli import build_parser, settings_from_args
from service.settings import GROUP_OF, GROUPS, Settings

SETTINGS_DOC = Path(__file__).resolve().parents[2] / "docs" / "settings.md"
ROW = re.compile(r"^\| `STREAMLDA_([A-Z0-9_]+)` \|", re.MULTILINE)
EVERY = SETTINGS_DOC.read_text().split("## Every setting")[1]  # the tables of every setting
DOCUMENTED = [name.lower() for name in ROW.findall(EVERY)]

# The flags that set a setting, as the commands had them before the settings were grouped:
# (command, flag, setting).
MODEL_FLAGS = [
    ("--vocab", "vocab"),
    ("--vocab-size", "vocab_size"),
    ("--sampler", "sampler"),
    ("--topics", "topics"),
    ("--batch-size", "batch_size"),
    ("--sweeps", "sweeps"),
    ("--burn-in", "burn_in"),
    ("--gibbs", "gibbs"),
    ("--step-size", "step_size"),
    ("--step-b", "step_b"),
    ("--step-c", "step_c"),
    ("--corpus-size", "corpus_size"),
    ("--corpus-growth", "corpus_growth"),
    ("--alpha", "alpha"),
    ("--gamma", "gamma"),
    ("--mean-decay", "mean_decay"),
    ("--heldout", "heldout"),
    ("--eval-every", "eval_every"),
    ("--device", "device"),
    ("--threads", "threads"),
    ("--seed", "seed"),
    ("--seeds", "seeds"),
]
FLAGS = [
    *[("train", flag, name) for flag, name in [("--source", "source"), *MODEL_FLAGS]],
    ("scrape", "--source", "source"),
    ("scrape", "--redis", "redis_url"),
    ("scrape", "--rate", "rate"),
    ("scrape", "--replay-rate", "replay_rate"),
    ("scrape", "--api-url", "wikipedia_api_url"),
    ("scrape", "--contact", "contact"),
    ("scrape", "--high-water", "stream_high_water"),
    ("api", "--redis", "redis_url"),
    ("api", "--host", "host"),
    ("api", "--port", "port"),
    ("api", "--api-workers", "api_workers"),
    ("worker", "--redis", "redis_url"),
    ("worker", "--data-dir", "data_dir"),
    *[("worker", flag, name) for flag, name in MODEL_FLAGS],
    ("worker", "--vocab-docs", "vocab_docs"),
    ("worker", "--checkpoint-every", "checkpoint_every_s"),
    ("worker", "--consumer", "consumer_name"),
    ("up", "--source", "source"),
    ("up", "--replay-rate", "replay_rate"),
    ("up", "--redis", "redis_url"),
    ("up", "--host", "host"),
    ("up", "--port", "port"),
    ("up", "--data-dir", "data_dir"),
    ("up", "--seeds", "seeds"),
    ("up", "--workers", "workers"),
    ("up", "--api-workers", "api_workers"),
    ("up", "--api-url", "wikipedia_api_url"),
    ("export", "--redis", "redis_url"),
]
# The flags each command requires besides the one tested.
REQUIRED = {
    "train": ["--source", "wikipedia", "--docs", "10", "--out", "out"],
    "export": ["--out", "out"],
}
# Values a setting's type and bounds alone do not make valid: counted words cover the
# vocabulary.
SAMPLES: dict[str, tuple[str, Any]] = {
    "vocab_counted": ("200000", 200_000),
    "max_topics": ("200", 200),  # at least topics (200)
    "shaping_kinds": ('["retire", "split"]', ["retire", "split"]),
    "shaping_overlap": ("6", 6),  # at most shaping_top (10)
}


def _bounds(info: FieldInfo) -> tuple[Any, Any]:
    """The lowest and highest values a numeric setting takes (or its open bounds)."""
    low: Any = None
    high: Any = None
    for bound in info.metadata:
        if isinstance(bound, annotated_types.Ge):
            low = bound.ge
        elif isinstance(bound, annotated_types.Gt):
            low = bound.gt
        elif isinstance(bound, annotated_types.Le):
            high = bound.le
        elif isinstance(bound, annotated_types.Lt):
            high = bound.lt
    return low, high


def sample(name: str) -> tuple[str, Any]:
    """A valid value of the setting that is not its default: as an operator writes it, and as
    Settings holds it in JSON."""
    if name in SAMPLES:
        return SAMPLES[name]
    info = GROUPS[GROUP_OF[name]].model_fields[name]
    default = info.get_default(call_default_factory=True)
    kind = info.annotation
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        kind = next(k for k in typing.get_args(kind) if k is not type(None))  # X | None: X
    if typing.get_origin(kind) is typing.Literal:
        choice = next(c for c in typing.get_args(kind) if c != default)
        return choice, choice
    if kind is bool:
        return str(not default).lower(), not default
    if kind in (int, float):
        low, high = _bounds(info)
        step = 1 if kind is int else 0.5
        value = (default if default is not None else (low or 0)) + step
        if high is not None and value >= high:
            value = (low + high) / 2 if kind is float else high - 1
        return str(value), value
    if kind is Path:
        return "/tmp/streamlda-sample", "/tmp/streamlda-sample"
    if typing.get_origin(kind) is list:
        return json.dumps(["https://a.example"]), ["https://a.example"]
    assert kind is str, f"{name}: no sample of {kind}"
    return "sample-value", "sample-value"


def test_the_doc_lists_every_setting_once() -> None:
    assert sorted(DOCUMENTED) == sorted(GROUP_OF)


@pytest.mark.parametrize("name", DOCUMENTED)
def test_each_documented_variable_sets_its_setting(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text, value = sample(name)
    monkeypatch.setenv(f"STREAMLDA_{name.upper()}", text)
    settings = Settings()
    assert settings.flat()[name] == value
    assert name in settings.given()
    assert Settings.model_validate({name: value}).value(name) == settings.value(name)


@pytest.mark.parametrize(("command", "flag", "name"), FLAGS)
def test_each_flag_of_a_setting_still_sets_it(
    command: str, flag: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in [f"STREAMLDA_{n.upper()}" for n in GROUP_OF]:
        monkeypatch.delenv(variable, raising=False)
    parser = build_parser(command)
    commands = next(a for a in parser._actions if a.dest == "command")
    assert flag in commands.choices[command].format_help()  # type: ignore[index]
    text, value = sample(name)
    given = [flag] if isinstance(value, bool) else [flag, text]
    args = parser.parse_args([command, *REQUIRED.get(command, []), *given])
    assert settings_from_args(args).flat()[name] == value
