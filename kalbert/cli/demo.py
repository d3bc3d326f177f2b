"""`kalbert demo`: the shipped demo recipe (`kalbert recipe run recipes/demo.yaml`, the README's `make run`)."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_verb
from kalbert.cli.recipe import add_run_arguments, run_from_args

HELP = "run the kalbert pipeline at small scale on ../shared/data (recipes/demo.yaml); rerun to resume"


def register(nouns) -> None:
    parser = add_verb(nouns, "demo", HELP, "kalbert demo --out outputs/demo --set vocab_size=4000", _demo)
    add_run_arguments(parser)


def _demo(args: argparse.Namespace) -> int:
    return run_from_args("demo", args)
