"""`kalbert env`: this machine as kalbert sees it, for bug reports and for reading benchmark figures."""

from __future__ import annotations

import argparse
import json

from kalbert.cli.common import add_verb

HELP = "show the CPU, instruction sets, bf16/int8 support and versions (paste it into bug reports)"
EXAMPLE = ("kalbert env\n  kalbert env --json > hardware.json   "
           "# the hardware block results files and model cards record")


def register(nouns) -> None:
    parser = add_verb(nouns, "env", HELP, EXAMPLE, _env)
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
