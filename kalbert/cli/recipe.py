"""`kalbert recipe run`: build a model from a recipe of kalbert stages; rerun to resume."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_verb
from kalbert.verbs import VERBS

HELP = VERBS["recipe run"].help


def register(nouns) -> None:
    parser = nouns.add_parser("recipe", help=HELP)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    run = add_verb(verbs, "recipe run", _run)
    add_run_arguments(run)
    run.add_argument("recipe", help="recipe YAML file, or a shipped recipe's name (demo, sbert-ko-zh-small, ...)")


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a recipe run (shared with `kalbert demo`)."""
    parser.add_argument("--out", help="output folder of every stage (default: the recipe's out)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a recipe setting (vocab_size=4000) or one stage's config value (sts.lr=5e-5); "
                             "repeatable")
    parser.add_argument("--until", metavar="STAGE", help="stop after this stage")
    parser.add_argument("--dry-run", action="store_true",
                        help="print each stage, whether it is done, its data and the command it stands for")
    parser.add_argument("--overwrite", action="store_true",
                        help="rebuild stages whose folder was made with other settings (else they are refused)")


def run_from_args(recipe: str, args: argparse.Namespace) -> int:
    from kalbert.recipe import load_recipe, run_recipe

    loaded = load_recipe(recipe, args.out, args.overrides)
    run_recipe(loaded, until=args.until, overwrite=args.overwrite, dry_run=args.dry_run)
    return 0


def _run(args: argparse.Namespace) -> int:
    return run_from_args(args.recipe, args)
