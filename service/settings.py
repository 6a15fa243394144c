"""One Settings object for every command: environment variables prefixed STREAMLDA_, flags override.

Every tunable of the service lives here with its default and meaning, in one group per part of
the service (``settings.model.topics``, ``settings.queue.stream``...). The variables and flags
stay flat (STREAMLDA_TOPICS, --topics): a setting's name is unique across the groups. Each
setting is declared once, in its group, with its flags (:class:`Flag`): every command's flags
(:func:`add_flags`) and docs/settings.md's tables, a section per group, are generated from the
declarations (``python -m service.settings``; a test keeps the doc in step).
"""

from __future__ import annotations

import argparse
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, get_args, get_origin

from pydantic import Field, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from service.settings_learning import (
    Flag,
    Group,
    ModelSettings,
    PublishSettings,
    WorkerSettings,
)
from service.settings_pipeline import (
    ApiSettings,
    QueueSettings,
    ScraperSettings,
    StoreSettings,
    UpSettings,
)
from service.settings_shaping import ShapingSettings

Part = TypeVar("Part")
PREFIX = "STREAMLDA_"
SECRET_FIELDS = {"admin_token", "redis_url"}  # never written to checkpoints


class _FlatEnvironment(PydanticBaseSettingsSource):
    """Each group's fields from STREAMLDA_<FIELD>: the groups nest, their variables stay flat."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: each group is read whole in __call__

    def __call__(self) -> dict[str, Any]:
        return {
            name: EnvSettingsSource(cast(type[BaseSettings], group), env_prefix=PREFIX)()
            for name, group in GROUPS.items()
        }


class Settings(BaseSettings):
    """All settings of streamlda, validated once at start-up; each part is handed its group or
    the few values it reads (:meth:`part`)."""

    model_config = SettingsConfigDict(extra="ignore")

    model: ModelSettings = Field(default_factory=ModelSettings)
    shaping: ShapingSettings = Field(default_factory=ShapingSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)
    queue: QueueSettings = Field(default_factory=QueueSettings)
    scraper: ScraperSettings = Field(default_factory=ScraperSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    publish: PublishSettings = Field(default_factory=PublishSettings)
    up: UpSettings = Field(default_factory=UpSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)

    if TYPE_CHECKING:  # settings are given by their flat names (topics=5) or by group

        def __init__(self, **values: Any) -> None: ...

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The values given (flags, code) over the environment's flat variables."""
        return init_settings, _FlatEnvironment(settings_cls)

    @model_validator(mode="before")
    @classmethod
    def _group(cls, data: Any) -> Any:
        """Settings given by their flat names (``topics=5``) moved into their groups, over the
        environment's values there."""
        if not isinstance(data, dict):
            return data
        grouped = {key: value for key, value in data.items() if key not in GROUP_OF}
        for name, value in data.items():
            if name in GROUP_OF:
                group = GROUP_OF[name]
                grouped[group] = {**dict(grouped.get(group) or {}), name: value}
        return grouped

    def value(self, name: str) -> Any:
        """The setting ``name`` (its flat name, as in STREAMLDA_<NAME>), from its group."""
        return getattr(getattr(self, GROUP_OF[name]), name)

    def flat(self) -> dict[str, Any]:
        """Every setting by its flat name, as JSON values."""
        return {
            name: value
            for group in GROUPS
            for name, value in getattr(self, group).model_dump(mode="json").items()
        }

    def given(self) -> set[str]:
        """The flat names of the settings that were set (by the environment, a flag or code)
        rather than left to their defaults."""
        return {name for group in GROUPS for name in getattr(self, group).model_fields_set}

    def updated(self, **values: Any) -> Settings:
        """A copy with the settings named (flat names) replaced, unvalidated as by model_copy,
        and counted as given."""
        unknown = values.keys() - GROUP_OF.keys()
        if unknown:
            raise TypeError(f"no setting {sorted(unknown)}")
        changes: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            changes.setdefault(GROUP_OF[name], {})[name] = value
        return self.model_copy(
            update={
                group: getattr(self, group).model_copy(update=change)
                for group, change in changes.items()
            }
        )

    def recorded(self) -> dict[str, Any]:
        """The settings as stored with a model: everything but secrets (tokens, Redis URLs
        that may carry a password), since checkpoints get copied around."""
        return {name: value for name, value in self.flat().items() if name not in SECRET_FIELDS}

    def part(self, kind: type[Part], **given: Any) -> Part:
        """The frozen config dataclass ``kind`` of one part, from the settings of the same
        names (and ``given``, the fields that are not settings as they are, e.g. a rank's
        consumer name): the commands hand each part only what it reads, never the whole."""
        names = {f.name for f in fields(kind)}  # type: ignore[arg-type]
        if not given.keys() <= names:
            raise TypeError(f"{kind.__name__} has no field {sorted(given.keys() - names)}")
        values = {name: given[name] if name in given else self.value(name) for name in names}
        return kind(**values)


# Each group of Settings by its field name, and each setting's group by the setting's name.
GROUPS: dict[str, type[Group]] = {
    name: cast(type[Group], info.annotation) for name, info in Settings.model_fields.items()
}
GROUP_OF: dict[str, str] = {
    name: group for group, kind in GROUPS.items() for name in kind.model_fields
}
# Every flag of a setting, (setting, flag), in the order the settings are declared.
FLAGS: list[tuple[str, Flag]] = [
    (name, flag)
    for kind in GROUPS.values()
    for name, info in kind.model_fields.items()
    for flag in info.metadata
    if isinstance(flag, Flag)
]


def add_flags(parser: argparse.ArgumentParser, command: str) -> None:
    """The flags of ``command`` that set a setting, as the settings declare them: the required
    first, then in the settings' order (an exclusive set together where its first member is);
    each flag's dest is its setting, which :func:`flag_values` reads back."""
    mine = [(name, flag) for name, flag in FLAGS if command in flag.commands]
    mine.sort(key=lambda declared: not declared[1].required)  # what the command needs first
    exclusive: dict[str, argparse._MutuallyExclusiveGroup] = {}
    for name, flag in mine:
        if flag.exclusive in exclusive:
            continue  # added with the first of its set
        if flag.exclusive is None:
            _add_flag(parser, name, flag)
            continue
        exclusive[flag.exclusive] = together = parser.add_mutually_exclusive_group()
        for other, member in mine:
            if member.exclusive == flag.exclusive:
                _add_flag(together, other, member)


def _add_flag(parser: argparse._ActionsContainer, name: str, flag: Flag) -> None:
    """One setting's flag: its type, or its choices, from the setting's; for a bool a switch
    both ways, ``--x`` and ``--no-x`` (unset unless given, so the environment's value
    stands; a default of true can still be turned off)."""
    kind = _kind(name)
    given: dict[str, Any] = {"dest": name, "help": flag.help}
    if flag.required:
        given["required"] = True
    if kind is bool:
        parser.add_argument(flag.name, action=argparse.BooleanOptionalAction, default=None, **given)
        return
    if flag.metavar is not None:
        given["metavar"] = flag.metavar
    if get_origin(kind) is Literal:
        given["choices"] = get_args(kind)
    elif kind is not str:
        given["type"] = kind
    parser.add_argument(flag.name, **given)


def _kind(name: str) -> Any:
    """A setting's type, X for X | None."""
    kind = GROUPS[GROUP_OF[name]].model_fields[name].annotation
    if isinstance(kind, types.UnionType) or get_origin(kind) is typing.Union:
        kind = next(k for k in get_args(kind) if k is not type(None))  # X | None: X
    return kind


def flag_values(args: Mapping[str, Any]) -> dict[str, Any]:
    """The settings the flags in ``args`` (parsed) gave, by name, to apply over the
    environment: with, for each flag given of an exclusive set, the others of the set that may
    be unset unset (``--vocab-size`` beats STREAMLDA_VOCAB)."""
    given = {name: value for name, value in args.items() if name in GROUP_OF and value is not None}
    sets = {name: flag.exclusive for name, flag in FLAGS if flag.exclusive is not None}
    for name in list(given):
        for other, together in sets.items():
            unset = GROUPS[GROUP_OF[other]].model_fields[other].default is None
            if together == sets.get(name) and other not in given and unset:
                given[other] = None
    return given


HEADER = "| environment variable | flag | default | meaning |"


def settings_table() -> str:
    """docs/settings.md's tables, a section per group: variable, flag, default and meaning of
    every setting."""
    sections = []
    for group, kind in GROUPS.items():
        title = (kind.__doc__ or "").strip().splitlines()[0]
        lines = [f"### {title.rstrip('.')} (`settings.{group}`)", "", HEADER, "|---|---|---|---|"]
        for name, info in kind.model_fields.items():
            lines.append(
                f"| `{PREFIX}{name.upper()}` | {_flags_shown(name)} | {_shown(info)} "
                f"| {info.description} |"
            )
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


def _flags_shown(name: str) -> str:
    """A setting's flag as the docs show it, with the commands that take it (— for none)."""
    commands: dict[str, list[str]] = {}
    for setting, flag in FLAGS:
        if setting == name:
            shown = f"--[no-]{flag.name[2:]}" if _kind(name) is bool else flag.name
            commands.setdefault(shown, []).extend(flag.commands)
    return ", ".join(f"`{flag}` ({', '.join(used)})" for flag, used in commands.items()) or "—"


def _shown(info: FieldInfo) -> str:
    """A setting's default as the docs show it."""
    default = info.get_default(call_default_factory=True)
    if default is None:
        return "unset"
    if isinstance(default, float) and default.is_integer() and default >= 1000:
        return f"`{int(default)}`"
    if isinstance(default, tuple | list):  # as its variable takes it: a JSON list
        return f"`{json.dumps(list(default))}`"
    return f"`{default}`"


if __name__ == "__main__":
    print(settings_table())
