"""`kalbert static distill|train`."""

from __future__ import annotations

import argparse

from kalbert.artifact import read_meta
from kalbert.cli.common import add_noun, add_overwrite, add_verb, config_from_args

HELP = "static sentence embeddings: one vector per vocabulary piece, no transformer"


def register(nouns) -> None:
    verbs = add_noun(nouns, "static", HELP, "kalbert static distill --teacher multilingual-e5-small --vocab "
                     "vocab/ko-zh-48k --out outputs/static-ko-zh")

    add_overwrite(add_verb(verbs, "static distill", _distill))
    add_overwrite(add_verb(verbs, "static train", _train))


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
