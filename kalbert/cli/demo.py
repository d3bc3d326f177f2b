"""`kalbert demo`: the shipped demo recipe (`kalbert recipe run recipes/demo.yaml`, the README's `make run`)."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_verb
from kalbert.cli.recipe import add_run_arguments, run_from_args
from kalbert.verbs import VERBS

HELP = VERBS["demo"].help


def register(nouns) -> None:
    add_run_arguments(add_verb(nouns, "demo", _demo))


def _demo(args: argparse.Namespace) -> int:
    return run_from_args("demo", args)
