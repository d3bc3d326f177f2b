"""`kalbert transplant`: a BERT/XLM-R sentence encoder turned into an ALBERT on a kalbert vocabulary."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_overwrite, add_verb, config_from_args
from kalbert.verbs import VERBS

HELP = VERBS["transplant"].help


def register(nouns) -> None:
    add_overwrite(add_verb(nouns, "transplant", _transplant))


def _transplant(args: argparse.Namespace) -> int:
    from kalbert.transplant import transplant

    result = transplant(config_from_args(args), overwrite=args.overwrite)
    kept = result.variance_kept
    mapping = ("identity (the teacher's own vocabulary)" if result.identity_vocab else
               ", ".join(f"{count:,} {kind}" for kind, count in result.mapping.items()))
    print(f"model: {result.out} ({result.model})")
    print(f"  teacher layers: {', '.join(map(str, result.teacher_layers))}")
    print(f"  variance kept: {kept['all']:.2%} (words {kept['words']:.2%}, positions {kept['positions']:.2%}, "
          f"types {kept['types']:.2%})")
    print(f"  pieces: {mapping}")
    return 0
