"""`kalbert static distill|train`."""

from __future__ import annotations

import argparse

from kalbert.artifact import read_meta
from kalbert.cli.common import add_config_arguments, add_noun, add_overwrite, add_verb, config_from_args

HELP = "static sentence embeddings: one vector per vocabulary piece, no transformer"


def register(nouns) -> None:
    verbs = add_noun(nouns, "static", HELP, "kalbert static distill --teacher multilingual-e5-small --vocab "
                     "vocab/ko-zh-48k --out outputs/static-ko-zh")

    distill = add_verb(
        verbs, "distill", "embed every piece of a kalbert vocabulary with a teacher, reduce by PCA and weight by "
        "frequency (model2vec-style)",
        "kalbert static distill --teacher multilingual-e5-small --vocab vocab/ko-zh-48k --out outputs/static-ko-zh",
        _distill)
    add_config_arguments(distill, "kalbert.static.distill:StaticDistillConfig", stage="distill")
    add_overwrite(distill)

    train = add_verb(
        verbs, "train", "fit a static model to the teacher's sentence vectors on corpus sentences, then optionally "
        "to STS pairs (tokenlearn-style)",
        "kalbert static train --teacher multilingual-e5-small --init outputs/static-ko-zh --corpus kowiki nsmc "
        "zh-laws zh-clue --max-sentences 150000 --matryoshka-dims 128 64 --out outputs/static-ko-zh-trained",
        _train)
    add_config_arguments(train, "kalbert.static.config:StaticTrainConfig", stage="train")
    add_overwrite(train)


def _print_model(out, best: dict | None = None) -> None:
    meta = read_meta(out)
    print(f"static model: {out} ({meta['dimension']}-d; loads with SentenceTransformer('{out}'))")
    if best:
        print(f"  best: {best['stage']} epoch {best['epoch']} (step {best['step']})")
    for metric in meta["metrics"]:
        print(f"  {metric['stage']} {metric['data']} {metric['metric']}: {metric['value']:.4f}")


def _distill(args: argparse.Namespace) -> int:
    from kalbert.static.distill import distill_static

    _print_model(distill_static(config_from_args(args), overwrite=args.overwrite))
    return 0


def _train(args: argparse.Namespace) -> int:
    from kalbert.static.train import train_static

    out, best = train_static(config_from_args(args), overwrite=args.overwrite)
    _print_model(out, best)
    return 0
