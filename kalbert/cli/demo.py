"""`kalbert demo`: the whole pipeline at small scale on the default data (the README's first command)."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_config_arguments, add_verb, config_from_args

HELP = "run the kalbert pipeline at small scale on ../shared/data; rerun to resume"


def register(nouns) -> None:
    from kalbert.demo import DemoConfig

    parser = add_verb(nouns, "demo", HELP, "kalbert demo --out outputs/demo\n  kalbert demo --config demo.yaml", _demo)
    add_config_arguments(parser, DemoConfig)


def _demo(args: argparse.Namespace) -> int:
    from kalbert.demo import run_demo

    run_demo(config_from_args(args))
    return 0
