"""Entry point of the ``kalbert`` command.

Each noun module exposes ``HELP`` and ``register(subparsers)``; its verbs' parsers are built from their records
(:data:`kalbert.verbs.VERBS`) and set ``func``. Verb flags come from config dataclasses, whose modules import no
torch but still take time to import, so only the noun being run registers its verbs; the others show up in
``kalbert --help`` by their one-line ``HELP``. Before a verb runs, the inputs its record declares are checked
(:meth:`kalbert.verbs.Verb.check`). User errors (:class:`KalbertError`, usage errors) print one line and exit 2;
``KALBERT_DEBUG=1`` shows tracebacks.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence

from kalbert import __version__
from kalbert.cli.common import KalbertParser, check_args, complete_settings
from kalbert.errors import KalbertError, WrongKind

# One module per noun under kalbert/cli/, each with register(subparsers).
NOUNS = ["vocab", "data", "pretrain", "transplant", "demo", "recipe", "bench", "mc", "qa", "rerank", "sbert", "static",
         "search", "serve", "teacher", "env"]

EPILOG = """examples:
  kalbert vocab build --lang ko --inputs kowiki nsmc --vocab-size 32000 --out vocab/ko-32k
  kalbert vocab inspect vocab/ko-32k "배우들의 연기도 좋았다"
  kalbert data list
run `kalbert NOUN --help` for the verbs of each noun."""


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The full parser, or with ``argv`` one whose only complete noun is the one ``argv`` runs, and whose only
    verb with its settings (:func:`kalbert.cli.common.complete_settings`) is the one it runs."""
    parser = KalbertParser(
        prog="kalbert",
        description="Korean/Chinese ALBERT models and sentence embeddings.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"kalbert {__version__}")
    nouns = parser.add_subparsers(dest="noun", metavar="NOUN", required=True)
    words = [word for word in argv or () if not word.startswith("-")]
    for noun in NOUNS:
        module = importlib.import_module(f"kalbert.cli.{noun}")
        if argv is None or words[:1] == [noun]:
            module.register(nouns)
        else:
            nouns.add_parser(noun, help=module.HELP)
    for command in _commands(nouns, words if argv is not None else None):
        complete_settings(command)
    return parser


def _commands(nouns: argparse._SubParsersAction, words: list[str] | None) -> list[argparse.ArgumentParser]:
    """The noun and verb parsers ``words`` run (every one for None)."""
    found = []
    for noun, noun_parser in nouns.choices.items():
        if words is not None and words[:1] != [noun]:
            continue
        found.append(noun_parser)
        verbs = next((a for a in noun_parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        for verb, verb_parser in (verbs.choices.items() if verbs else ()):
            if words is None or words[1:2] == [verb]:
                found.append(verb_parser)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(argv)
        try:
            args = parser.parse_args(argv)
        except SystemExit as exited:  # --help and --version exit with 0 as argparse has them do
            if exited.code != 2:
                raise
            return 2  # a usage error, printed in one line by KalbertParser
        check_args(args)
        result = args.func(args)
    except KalbertError as exc:
        if isinstance(exc, WrongKind):
            from kalbert.verbs import makers

            exc.name_makers(makers(exc.kinds))
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
