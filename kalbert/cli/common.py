"""Helpers shared by the CLI noun modules: verbs with examples, and flags generated from config dataclasses."""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from kalbert.config import Setting, build_config, read_config_file, render_command, settings


def add_verb(verbs, name: str, help: str, example: str, func) -> argparse.ArgumentParser:
    """A verb parser whose --help ends with a working example."""
    parser = verbs.add_parser(
        name,
        help=help,
        description=help,
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=func)
    return parser


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or a positive integer, got {text}")
    return value


def _value_parser(setting: Setting):
    """int settings must be positive unless 0 means something: their default is 0 or their doc says what 0
    does ("(0: no check)"); seeds take any integer."""
    if setting.scalar is not int or setting.name == "seed":
        return setting.scalar
    return non_negative_int if setting.default == 0 or "(0:" in setting.doc else positive_int


def _help(setting: Setting) -> str:
    default = setting.default
    shown = "" if setting.required or default in (None, False, [], "") else f" (default: {default})"
    return (setting.doc + shown).replace("%", "%%")


def add_config_arguments(parser: argparse.ArgumentParser, cls: type, positional: tuple[str, ...] = (),
                         stage: str | None = None) -> None:
    """One flag per setting of ``cls`` (``positional`` ones as arguments), plus ``--config FILE``.

    Flags default to absent, so the config is: dataclass defaults, then the file, then the flags given.
    ``stage`` picks the stage of a multi-stage ``kalbert.json`` (sentence models) to read.
    """
    parser.add_argument("--config", metavar="FILE",
                        help="YAML config or an artifact's kalbert.json (or its folder); flags override it")
    group = parser.add_argument_group("settings")
    for setting in settings(cls):
        kwargs: dict[str, Any] = {"default": argparse.SUPPRESS, "help": _help(setting)}
        if setting.scalar is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = _value_parser(setting)
            if setting.choices:
                kwargs["choices"] = setting.choices
            if setting.is_list:
                kwargs["nargs"] = "*" if setting.default == [] else "+"
        if setting.name in positional:  # argparse checks a positional's default against its choices
            kwargs.update(nargs="*" if setting.is_list else "?", metavar=setting.name.upper(), default=None)
            group.add_argument(setting.name, **kwargs)
        else:
            group.add_argument(setting.flag, dest=setting.name, **kwargs)
    parser.set_defaults(config_class=cls, config_stage=stage)


def config_from_args(args: argparse.Namespace) -> Any:
    """The verb's config: defaults, overridden by ``--config FILE``, overridden by the flags given."""
    cls = args.config_class
    values = read_config_file(args.config, cls, args.config_stage) if args.config else {}
    names = {s.name for s in settings(cls)}
    given = {name: value for name, value in vars(args).items() if name in names}
    values.update({k: v for k, v in given.items() if v not in (None, [])})  # absent positionals
    return build_config(cls, values)



def add_overwrite(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output folder")


def add_results_arguments(parser: argparse.ArgumentParser) -> None:
    """--results/--name/--note of the fine-tuning verbs, whose runs `kalbert bench report` tables."""
    parser.add_argument("--results", help="also write a benchmark results JSON here (for `kalbert bench report`)")
    parser.add_argument("--name", help="model name in reports (default: the --model folder name)")
    parser.add_argument("--note", default="", help="caveat printed beside the result in reports")


def results_command(verb: str, args: argparse.Namespace, config: Any) -> str:
    """The command line that reproduces a fine-tuning run and its results file (defaults left out)."""
    words = shlex.split(render_command(verb, config))
    for flag, value in (("--results", args.results), ("--name", args.name), ("--note", args.note)):
        words += [flag, value] if value else []
    return shlex.join(words + (["--overwrite"] if args.overwrite else []))
