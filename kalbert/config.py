"""A stage's config dataclass is its schema: flags, config files and reproducing commands come from it.

Each setting is a dataclass field; its docstring (the string literal under it) is its help. A field
holding another config dataclass (``SentenceTrainConfig.loop``) is flattened: its settings are flags and keys
of their own, so setting names are unique within a stage. Config files are YAML (``kalbert/configs/``)
or any artifact's ``kalbert.json``, so "rerun what made this folder" is ``--config FOLDER/kalbert.json``.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import math
import re
import shlex
import textwrap
import types
import typing
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from kalbert.artifact import META_FILE
from kalbert.errors import KalbertError

DEFAULT_SEED = 42
"""The seed every stage starts from unless told otherwise."""

Language = Literal["ko", "zh", "ko+zh"]
"""What a vocabulary, corpus or model is written in; "ko+zh" is both."""

CONFIGS_DIR = Path(__file__).parent / "configs"
"""The shipped YAML configs; ``--config vocab/ko-32k.yaml`` finds them from anywhere."""


@dataclass(frozen=True)
class Setting:
    """One leaf field of a config dataclass, wherever it is nested."""

    path: tuple[str, ...]
    """attribute names from the top config down to the field, e.g. ("loop", "lr")"""
    type: Any
    """the field's resolved annotation"""
    default: Any
    """the default value, ``dataclasses.MISSING`` for a required setting"""
    doc: str
    """the field's docstring, one line"""

    @property
    def name(self) -> str:
        return self.path[-1]

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING

    @property
    def value_type(self) -> Any:
        """The annotation without ``None``: ``int | None`` -> ``int``."""
        args = [a for a in typing.get_args(self.type) if a is not type(None)]
        is_union = typing.get_origin(self.type) in (typing.Union, types.UnionType)
        if is_union and len(args) == 1:
            return args[0]
        if is_union and any(typing.get_origin(a) is list for a in args):  # ``str | list[str]`` reads as a list
            return next(a for a in args if typing.get_origin(a) is list)
        return self.type

    @property
    def is_list(self) -> bool:
        return typing.get_origin(self.value_type) is list

    @property
    def choices(self) -> tuple | None:
        kind = typing.get_args(self.value_type)[0] if self.is_list else self.value_type
        return typing.get_args(kind) if typing.get_origin(kind) is Literal else None

    @property
    def scalar(self) -> type:
        """The Python type of one value (a list's element, a Literal's values)."""
        kind = typing.get_args(self.value_type)[0] if self.is_list else self.value_type
        if typing.get_origin(kind) is Literal:
            return type(typing.get_args(kind)[0])
        return kind


# Bounds that a setting's meaning puts on its numbers, by name, so flags and config files refuse the same values
# before any work: learning rates and epochs are above 0, shares and probabilities lie in [0, 1], weights and
# decays are not negative. Integers are positive unless 0 means something (default 0, "0: ..." in the doc, or an
# index counted from 0).
_POSITIVE = {"lr", "epochs", "sts_epochs", "lang_temperature", "sif_a", "decay_power"}
_SHARES = {"threshold", "max_unknown", "min_cosine", "duplicate_cosine"}
_SHARE_SUFFIXES = ("_ratio", "_prob", "_fraction", "_share", "_coverage")
_NON_NEGATIVE = {"weight_decay", "max_grad_norm", "weights"}


def value_problem(setting: Setting, value: Any) -> str | None:
    """What ``setting`` needs when ``value`` is out of its range ("a number above 0"), else None."""
    name = setting.name
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if setting.scalar is int:
        if name == "seed":
            return None
        if setting.default == 0 or re.search(r"(?<![\d.])0: ", setting.doc):  # "(0: no check)"
            return None if value >= 0 else "0 or a positive integer"
        return None if value > 0 else "a positive integer"
    if not math.isfinite(value):
        return "a finite number"
    if name in _POSITIVE or name.endswith("_lr"):
        return None if value > 0 else "a number above 0"
    if name in _SHARES or name.endswith(_SHARE_SUFFIXES):
        return None if 0 <= value <= 1 else "a number from 0 to 1"
    if name in _NON_NEGATIVE or name.endswith("_weight"):
        return None if value >= 0 else "a non-negative number"
    return None


def field_docs(cls: type) -> dict[str, str]:
    """Field name -> its docstring, read from the class source (a string literal under the field)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, after in zip(body, body[1:], strict=False):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def _is_config(kind: Any) -> bool:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


@cache
def settings(cls: type) -> tuple[Setting, ...]:
    """Every leaf setting of ``cls``, nested config dataclasses flattened, in declaration order."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    found: list[Setting] = []
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if _is_config(kind):
            found += [Setting((f.name, *s.path), s.type, getattr(default, s.name), s.doc) for s in settings(kind)]
        else:
            found.append(Setting((f.name,), kind, default, docs.get(f.name, "")))
    names = [s.name for s in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise TypeError(f"{cls.__name__}: setting names must be unique once flattened: {duplicates}")
    return tuple(found)


def _check_value(setting: Setting, value: Any, source: str) -> Any:
    """A value from a file, converted where YAML/JSON is looser than the type (ints for floats)."""
    if value is None:
        return None
    if setting.is_list and isinstance(value, str):
        value = [value]
    values = value if setting.is_list else [value]
    if not isinstance(values, list):
        raise KalbertError(f"{source}: {setting.name} must be a list, got {value!r}")
    converted = []
    for item in values:
        if setting.scalar is float and isinstance(item, int) and not isinstance(item, bool):
            item = float(item)
        if setting.scalar in (int, float, str, bool) and not isinstance(item, setting.scalar) or (
                setting.scalar is int and isinstance(item, bool)):
            raise KalbertError(f"{source}: {setting.name} must be {setting.scalar.__name__}, got {item!r}")
        problem = value_problem(setting, item)
        if problem:
            raise KalbertError(f"{source}: {setting.name} must be {problem}, got {item!r}")
        if setting.choices and item not in setting.choices:
            raise KalbertError(f"{source}: {setting.name} must be one of {', '.join(map(str, setting.choices))}, "
                               f"got {item!r}")
        converted.append(item)
    return converted if setting.is_list else converted[0]


def flatten_values(cls: type, values: dict[str, Any], source: str) -> dict[str, Any]:
    """Setting name -> value from a mapping written flat (``lr: 1e-4``) or nested like the dataclass
    (``loop: {lr: 1e-4}``); every unknown key is named in one error."""
    by_name = {s.name: s for s in settings(cls)}
    nested = {f.name for f in dataclasses.fields(cls) if _is_config(typing.get_type_hints(cls)[f.name])}
    flat: dict[str, Any] = {}
    unknown: list[str] = []
    for key, value in values.items():
        if key in nested and isinstance(value, dict):
            for inner, inner_value in value.items():
                (flat.__setitem__(inner, inner_value) if inner in by_name else unknown.append(f"{key}.{inner}"))
        elif key in by_name:
            flat[key] = value
        else:
            unknown.append(key)
    if unknown:
        raise KalbertError(f"{source}: unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}",
                           f"known: {', '.join(by_name)}")
    return {name: _check_value(by_name[name], value, source) for name, value in flat.items()}


def build_config(cls: type, values: dict[str, Any]) -> Any:
    """An instance of ``cls`` from setting names -> values (defaults for the rest)."""
    missing = [s.flag for s in settings(cls) if s.required and values.get(s.name) is None]
    if missing:
        raise KalbertError(f"missing {', '.join(missing)}", f"give {'them' if len(missing) > 1 else 'it'} as flags "
                           "or in --config FILE")
    defaults = {s.path: s.default for s in settings(cls)}

    def make(kind: type, prefix: tuple[str, ...]) -> Any:
        hints = typing.get_type_hints(kind)
        kwargs = {}
        for f in dataclasses.fields(kind):
            path = (*prefix, f.name)
            if _is_config(hints[f.name]):
                kwargs[f.name] = make(hints[f.name], path)
            elif f.name in values:
                kwargs[f.name] = values[f.name]
            elif prefix:  # a nested config's default may differ from its class's (DistillConfig.loop)
                kwargs[f.name] = defaults[path]
        return kind(**kwargs)

    return make(cls, ())


def read_config_file(path: str | Path, cls: type, stage: str | None = None) -> dict[str, Any]:
    """Setting name -> value from a YAML config, a ``kalbert.json`` or an artifact folder.

    A ``kalbert.json`` gives its ``config``, or for a folder made in stages (sentence models) the config
    of its last ``stage``-named stage. A bare relative path is also looked up under ``kalbert/configs/``.
    """
    path = Path(path)
    if not path.exists() and (CONFIGS_DIR / path).exists():
        path = CONFIGS_DIR / path
    if path.is_dir():
        path = path / META_FILE
    if not path.is_file():
        raise KalbertError(f"config file {path} not found", "pass a YAML file or an artifact's kalbert.json")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise KalbertError(f"config {path} is not UTF-8 text (byte {exc.start})",
                           "save it as UTF-8 YAML, or pass an artifact's kalbert.json") from None
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            values = yaml.safe_load(text) or {}
        else:
            values = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - yaml and json raise their own error types
        raise KalbertError(f"cannot read config {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(values, dict):
        raise KalbertError(f"config {path} is not a mapping of settings")
    if "kind" in values and "kalbert_version" in values:  # an artifact's record, not a config file
        values = _recorded_config(values, path, stage)
    upgrade = getattr(cls, "upgrade_values", None)  # settings renamed since older records were written
    return flatten_values(cls, upgrade(values) if upgrade else values, str(path))


def _recorded_config(meta: dict[str, Any], path: Path, stage: str | None) -> dict[str, Any]:
    if isinstance(meta.get("config"), dict):
        return meta["config"]
    stages = [s for s in meta.get("stages") or [] if stage is None or s.get("stage") == stage]
    if not stages:
        raise KalbertError(f"{path} records no {stage or ''} config".replace("  ", " "),
                           f"it was made by: {', '.join(s.get('stage', '?') for s in meta.get('stages') or [])}")
    return stages[-1]["config"]


def recorded_values(values: dict[str, Any]) -> dict[str, Any]:
    """Setting name -> value of a recorded config (a ``kalbert.json``'s ``config``), nested like its dataclass
    (``loop: {lr: ...}``) or flat, as records from before a setting moved into a nested config are."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        flat.update(recorded_values(value) if isinstance(value, dict) else {key: value})
    return flat


def config_values(config: Any) -> dict[str, Any]:
    """Setting name -> value of a config instance (nested configs flattened)."""
    values = {}
    for setting in settings(type(config)):
        value = config
        for attr in setting.path:
            value = getattr(value, attr)
        values[setting.name] = value
    return values


def render_command(command: str, config: Any, positional: tuple[str, ...] = ()) -> str:
    """The shell command that reproduces ``config``: ``command`` plus every setting that differs from its
    default (required ones always), ``positional`` settings first without their flag."""
    words = shlex.split(command)
    values = config_values(config)
    by_name = {s.name: s for s in settings(type(config))}
    for name in positional:
        value = values[name]
        words += [str(v) for v in value] if isinstance(value, list) else [str(value)]
    for name, value in values.items():
        setting = by_name[name]
        if name in positional or (not setting.required and value == setting.default):
            continue
        if setting.scalar is bool:
            words.append(setting.flag if value else "--no-" + setting.flag[2:])
        elif value is None:
            continue
        elif isinstance(value, list):
            words += [setting.flag, *map(str, value)]
        else:
            words += [setting.flag, str(value)]
    return shlex.join(words)
