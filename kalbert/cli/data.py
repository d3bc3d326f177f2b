"""`kalbert data list|build|questions`: the data sets kalbert knows, pretraining instances built from corpora,
and training-split questions written as a corpus."""

from __future__ import annotations

import argparse

from kalbert.artifact import read_meta
from kalbert.cli.common import add_noun, add_overwrite, add_verb, config_from_args

HELP = "list data sets, build pretraining data"


def register(nouns) -> None:
    verbs = add_noun(nouns, "data", HELP, "kalbert data list\n  kalbert data build --vocab vocab/ko-32k "
                     "--inputs kowiki --max-documents 5000 --out outputs/data-kowiki-5k")
    add_verb(verbs, "data list", _list)
    add_overwrite(add_verb(verbs, "data build", _build))
    questions = add_verb(verbs, "data questions", _questions)
    questions.add_argument("--sets", nargs="+", required=True, metavar="SET[:SPLIT]",
                           help="QA sets (korquad, cmrc2018, drcd) or kobest-boolq; the split defaults to train")
    questions.add_argument("--out", required=True, help="output .txt corpus file, one question per document")
    questions.add_argument("--overwrite", action="store_true", help="replace an existing output file")


def _list(args: argparse.Namespace) -> int:
    from kalbert.data import describe_datasets

    rows = describe_datasets()
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        state = "found" if row["found"] else "MISSING"
        splits = ",".join(row["splits"])
        print(f"{row['name']:<{width}}  {row['kind']:<8} {row['lang']:<9} {state:<8} {splits:<22} {row['url']}")
    return 0


def _questions(args: argparse.Namespace) -> int:
    from kalbert.data.questions import write_questions

    count = write_questions(args.sets, args.out, overwrite=args.overwrite)
    print(f"questions: {args.out} ({count:,} distinct questions from {', '.join(args.sets)})")
    print(f"  grade pairs of them with: kalbert sbert mine --corpus {args.out} ...")
    return 0


def _build(args: argparse.Namespace) -> int:
    from kalbert.data.passages import describe_drops
    from kalbert.pretrain import build_pretraining_data

    out = build_pretraining_data(config_from_args(args), overwrite=args.overwrite)
    meta = read_meta(out)
    for split, info in meta["splits"].items():
        stats = meta["stats"][split]
        print(f"{split}: {info['instances']:,} instances, {info['tokens']:,} tokens from "
              f"{stats.get('documents', 0):,} documents ({stats.get('single_sentence_documents', 0):,} "
              f"with one sentence, {stats.get('random_b_instances', 0):,} random-B instances)")
    print(describe_drops(meta["evaluation_passages"]))
    print(f"data: {out} ({meta['build_seconds']} s)")
    return 0
