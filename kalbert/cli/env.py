"""`kalbert env`: this machine as kalbert sees it, for bug reports and for reading benchmark figures."""

from __future__ import annotations

import argparse
import json

from kalbert.cli.common import add_verb
from kalbert.verbs import VERBS

HELP = VERBS["env"].help


def register(nouns) -> None:
    parser = add_verb(nouns, "env", _env)
    parser.add_argument("--json", action="store_true",
                        help="print the hardware block (as results files record it) as JSON")


def _env(args: argparse.Namespace) -> int:
    from kalbert import hardware

    if args.json:
        print(json.dumps(hardware.hardware_block(), indent=2, ensure_ascii=False))
        return 0
    print("Copy-and-paste the text below in your GitHub issue.\n")
    print("\n".join(hardware.env_lines(hardware.detect())))
    return 0
