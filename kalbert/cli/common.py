"""Helpers shared by the CLI noun modules: nouns with examples, verbs built from their records
(:data:`kalbert.verbs.VERBS`), one-line usage errors with the nearest noun or verb, and flags generated from config
dataclasses."""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import shlex
import textwrap
from collections.abc import Callable
from typing import Any, NoReturn

from kalbert.config import (
    Setting,
    build_config,
    config_values,
    read_config_file,
    settings,
    value_problem,
)
from kalbert.verbs import VERBS, Verb, command_for


class KalbertParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (like every kalbert error), exit code 2; a mistyped noun
    or verb is answered with the nearest one."""

    def error(self, message: str) -> NoReturn:
        verbs = _subcommands(self)
        if verbs is not None and message.startswith("the following arguments are required"):
            message = f"choose a {(verbs.metavar or 'noun').lower()}: {', '.join(_names(verbs))}"
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """Where argparse checks the noun or verb word: an unknown one gets the nearest name, not the whole list."""
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            what, names = (action.metavar or "noun").lower(), _names(action)
            close = difflib.get_close_matches(value, names, n=1)
            raise argparse.ArgumentError(None, f"unknown {what} '{value}', did you mean '{close[0]}'?" if close else
                                         f"unknown {what} '{value}'; choose a {what}: {', '.join(names)}")
        super()._check_value(action, value)


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _names(subcommands: argparse._SubParsersAction) -> list[str]:
    """The nouns or verbs offered: a verb's old name (an alias) runs the same parser, so only its name is."""
    return [name for name, child in subcommands.choices.items() if child.prog.rpartition(" ")[2] == name]


def add_noun(nouns, name: str, help: str, examples: str) -> Any:
    """A noun parser whose --help ends with examples; returns its verbs, for :func:`add_verb`."""
    parser = nouns.add_parser(name, help=help, description=help, epilog=f"examples:\n  {examples}",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser.add_subparsers(dest="verb", metavar="VERB", required=True)


def add_verb(verbs, name: str, func: Callable[[argparse.Namespace], int],
             description: str | None = None) -> argparse.ArgumentParser:
    """The parser of the verb ``name`` ("sbert train") as its record (:data:`kalbert.verbs.VERBS`) declares it: its
    help, the working example its --help ends with, its old names and, for a config verb, a flag per setting;
    ``func`` runs it once :func:`check_args` has checked its declared inputs."""
    verb = VERBS[name]
    parser = verbs.add_parser(
        _word(verb.name),
        aliases=[_word(alias) for alias in verb.aliases],
        help=verb.help,
        description=description or verb.help,
        epilog=f"example:\n{textwrap.indent(verb.example, '  ')}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(func=func, command=verb.name)
    if verb.config:
        _add_config_arguments(parser, verb)
    return parser


def _word(name: str) -> str:
    """The word a parser answers to: "train" for "sbert train", "serve" for "serve"."""
    return name.rpartition(" ")[2]


def _value_parser(setting: Setting):
    """The flag's type: the setting's scalar type within the bounds its meaning sets (:func:`value_problem`)."""
    if setting.scalar not in (int, float):
        return setting.scalar

    def parse(text: str) -> int | float:
        value = setting.scalar(text)
        problem = value_problem(setting, value)
        if problem:
            raise argparse.ArgumentTypeError(f"expected {problem}, got {text}")
        return value

    parse.__name__ = setting.scalar.__name__  # argparse names it in "invalid int value"
    return parse


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def probability(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text}")
    return value


def _shown(value: Any) -> str:
    """A default as a command line would spell it: lists space-separated, booleans on/off."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return " ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def _help(setting: Setting, flags: dict[str, str]) -> str:
    """The setting's docstring in command-line terms: ``name`` as its --flag, other code in single backquotes,
    "None: x" as "default: x" and any other None as "unset"."""
    doc = re.sub(r"``([^`]+)``", lambda m: flags.get(m.group(1), f"`{m.group(1)}`"), setting.doc)
    doc = re.sub(r"\bNone\b", "unset", re.sub(r"\bNone: ", "default: ", doc))
    default = setting.default
    shown = "" if setting.required or default in (None, False, [], "") else f" (default: {_shown(default)})"
    return (doc + shown).replace("%", "%%")


def _add_config_arguments(parser: argparse.ArgumentParser, verb: Verb) -> None:
    """``--config FILE``, and one flag per setting of the verb's config (its ``positional`` ones as arguments)
    once :func:`complete_settings` adds them.

    Flags default to absent, so the config is: dataclass defaults, then the file, then the flags given. The
    verb's ``config_stage`` picks the stage of a multi-stage ``kalbert.json`` to read. The config class is
    imported only for the verb being run or shown, so `kalbert NOUN --help` imports no config module; config
    modules import no torch, so a verb's --help does not either.
    """
    parser.add_argument("--config", metavar="FILE",
                        help="YAML config or an artifact's kalbert.json (or its folder); flags override it")
    parser.set_defaults(deferred_settings=(verb.config, verb.positional, verb.config_stage))


def complete_settings(parser: argparse.ArgumentParser) -> None:
    """Add the flags of a config verb's settings (no-op for other parsers, or once added)."""
    deferred = parser.get_default("deferred_settings")
    if deferred:
        ref, positional, stage = deferred
        module, _, name = ref.partition(":")
        _add_settings(parser, getattr(importlib.import_module(module), name), positional, stage)
        parser.set_defaults(deferred_settings=None)


def _add_settings(parser: argparse.ArgumentParser, cls: type, positional: tuple[str, ...], stage: str | None) -> None:
    group = parser.add_argument_group("settings")
    flags = {s.name: s.flag for s in settings(cls)}
    for setting in settings(cls):
        kwargs: dict[str, Any] = {"default": argparse.SUPPRESS, "help": _help(setting, flags)}
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


def check_args(args: argparse.Namespace) -> None:
    """Check every input the running verb declares (:meth:`kalbert.verbs.Verb.check`) before it loads or reads
    anything: its flags and, for a config verb, the config that ``--config FILE`` and the flags make together."""
    command = getattr(args, "command", None)
    if not command:
        return
    values = vars(args).copy()
    if getattr(args, "config_class", None) is not None:
        values.update(config_values(config_from_args(args)))
    VERBS[command].check(values, overwrite=bool(getattr(args, "overwrite", False)))


def add_overwrite(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--overwrite", action="store_true", help="replace an existing output folder")


def add_results_arguments(parser: argparse.ArgumentParser) -> None:
    """--results/--name/--note of the fine-tuning verbs, whose runs `kalbert bench report` tables."""
    parser.add_argument("--results", help="also write a benchmark results JSON here (for `kalbert bench report`)")
    parser.add_argument("--name", help="model name in reports (default: the --model folder name)")
    parser.add_argument("--note", default="", help="caveat printed beside the result in reports")


def results_command(args: argparse.Namespace, config: Any) -> str:
    """The command line that reproduces a fine-tuning run and its results file (defaults left out)."""
    words = shlex.split(command_for(config))
    for flag, value in (("--results", args.results), ("--name", args.name), ("--note", args.note)):
        words += [flag, value] if value else []
    return shlex.join(words + (["--overwrite"] if args.overwrite else []))
