"""Entry point of the ``kalbert`` command.

Each noun module exposes ``HELP`` and ``register(subparsers)``; its verbs set ``func`` on their parser.
Verb flags come from config dataclasses whose modules may import torch, so only the noun being run
registers its verbs; the others show up in ``kalbert --help`` by their one-line ``HELP``.
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
NOUNS = ["vocab", "data", "pretrain", "transplant", "demo", "bench", "mc", "qa", "sbert", "static", "search",
         "teacher", "env"]

EPILOG = """examples:
  kalbert vocab build --lang ko --inputs kowiki nsmc --vocab-size 32000 --out vocab/ko-32k
  kalbert vocab inspect vocab/ko-32k "배우들의 연기도 좋았다"
  kalbert data list
run `kalbert NOUN --help` for the verbs of each noun."""


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The full parser, or with ``argv`` one whose only complete noun is the one ``argv`` runs."""
    parser = argparse.ArgumentParser(
        prog="kalbert",
        description="Korean/Chinese ALBERT models and sentence embeddings.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kalbert {__version__}")
    nouns = parser.add_subparsers(dest="noun", metavar="NOUN", required=True)
    running = next((word for word in argv or () if not word.startswith("-")), None)
    for noun in NOUNS:
        module = importlib.import_module(f"kalbert.cli.{noun}")
        if argv is None or noun == running:
            module.register(nouns)
        else:
            nouns.add_parser(noun, help=module.HELP)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(argv)
        args = parser.parse_args(argv)
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
