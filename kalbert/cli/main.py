"""Entry point of the ``kalbert`` command.

Each noun module exposes ``register(subparsers)``; its verbs set ``func`` on their parser.
User errors (:class:`KalbertError`) print one line and exit 2; ``KALBERT_DEBUG=1`` shows tracebacks.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence

from kalbert import __version__
from kalbert.errors import KalbertError

# One module per noun under kalbert/cli/, each with register(subparsers).
NOUNS = ["vocab", "data", "pretrain", "transplant", "demo", "bench", "mc", "qa", "sbert", "search", "teacher"]

EPILOG = """examples:
  kalbert vocab build --lang ko --input kowiki nsmc --vocab-size 32000 --out vocab/ko-32k
  kalbert vocab inspect vocab/ko-32k "배우들의 연기도 좋았다"
  kalbert data list
run `kalbert NOUN --help` for the verbs of each noun."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kalbert",
        description="Korean/Chinese ALBERT models and sentence embeddings.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kalbert {__version__}")
    nouns = parser.add_subparsers(dest="noun", metavar="NOUN", required=True)
    for noun in NOUNS:
        importlib.import_module(f"kalbert.cli.{noun}").register(nouns)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.func(args)
    except KalbertError as exc:
        if os.environ.get("KALBERT_DEBUG") == "1":
            traceback.print_exc()
        print(f"kalbert: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kalbert: interrupted; completed outputs are intact, rerun the same command to resume", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
