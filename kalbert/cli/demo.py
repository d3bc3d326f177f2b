"""`kalbert demo`: the whole pipeline at small scale on the default data (the README's first command)."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_verb


def register(nouns) -> None:
    parser = add_verb(
        nouns,
        "demo",
        "run the kalbert pipeline at small scale on ../shared/data; rerun to resume",
        "kalbert demo --out outputs/demo",
        _demo,
    )
    parser.add_argument("--out", default="outputs/demo", help="folder for every artifact")
    parser.add_argument("--corpus-sentences", type=int, default=12_000,
                        help="corpus sentences the student learns the teacher's embeddings of")


def _demo(args: argparse.Namespace) -> int:
    from kalbert.demo import DemoConfig, run_demo

    run_demo(DemoConfig(out=args.out, corpus_sentences=args.corpus_sentences))
    return 0
