"""Helpers shared by the CLI noun modules."""

from __future__ import annotations

import argparse


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
