"""`kalbert pretrain`: MLM + SOP (or span selection) pretraining, from scratch or further, one process or many."""

from __future__ import annotations

import argparse
import logging
import os

from kalbert.cli.common import add_verb, config_from_args, positive_int
from kalbert.verbs import VERBS

HELP = VERBS["pretrain"].help


def register(nouns) -> None:
    parser = add_verb(nouns, "pretrain", _pretrain, description="Pretrain an ALBERT model (transformers "
                      "AlbertForPreTraining) on data from `kalbert data build`. The same command runs under torchrun "
                      "/ accelerate launch (DDP).")
    parser.add_argument("--overwrite", action="store_true", help="delete an existing run in --out first")
    # --list-presets runs nothing, so it leaves no command whose inputs are checked (kalbert.cli.common.check_args)
    parser.add_argument("--list-presets", dest="command", action="store_const", const=None, default="pretrain",
                        help="print the presets' parameter counts and exit")
    parser.add_argument("--vocab-size", type=positive_int, default=30000, help="vocabulary size for --list-presets")


def _list_presets(vocab_size: int) -> int:
    from kalbert.pretrain.presets import PRESETS, ModelConfig, albert_config, describe

    for name in PRESETS:
        print(f"{name:<6} {describe(albert_config(ModelConfig(preset=name), vocab_size))}")
    return 0


def _pretrain(args: argparse.Namespace) -> int:
    if args.command is None:  # --list-presets
        return _list_presets(args.vocab_size)
    from kalbert.pretrain import pretrain

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = config_from_args(args)
    out = pretrain(config, overwrite=args.overwrite)
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"model: {out}")
    return 0
