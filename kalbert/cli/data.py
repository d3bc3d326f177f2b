"""`kalbert data list|build`: the data sets kalbert knows, and pretraining instances built from corpora."""

from __future__ import annotations

import argparse

from kalbert.cli.common import add_verb, positive_int


def register(nouns) -> None:
    parser = nouns.add_parser("data", help="list data sets, build pretraining data")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    add_verb(verbs, "list", "list the registered data sets and whether they are present", "kalbert data list", _list)

    build = add_verb(
        verbs,
        "build",
        "build SOP pretraining instances (memory-mapped shards with word/morpheme flags) from corpora",
        "kalbert data build --vocab vocab/ko-32k --input kowiki --max-documents 5000 "
        "--out outputs/data-kowiki-5k",
        _build,
    )
    build.add_argument("--vocab", required=True, help="vocabulary folder (kalbert vocab build)")
    build.add_argument("--input", nargs="+", required=True, help="corpus names (kalbert data list) or text files")
    build.add_argument("--out", required=True, help="output folder")
    build.add_argument("--max-seq-length", type=positive_int, default=128)
    build.add_argument("--short-seq-prob", type=float, default=0.1,
                       help="probability of a random shorter target length (ALBERT: 0.1)")
    build.add_argument("--heldout", type=float, default=0.01, help="share of documents held out for evaluation")
    build.add_argument("--single-sentence", default="random-b", choices=["random-b", "split"],
                       help="SOP pair from a one-sentence chunk: B from another document, label 1 (ALBERT), or the "
                            "sentence cut at a word start (every instance asks about order)")
    build.add_argument("--max-documents", type=int, default=0, help="read only the first N documents (0: all)")
    build.add_argument("--seed", type=int, default=12345)
    build.add_argument("--processes", type=int, default=0, help="worker processes (0: all cores)")
    build.add_argument("--overwrite", action="store_true", help="replace an existing output folder")


def _list(args: argparse.Namespace) -> int:
    from kalbert.datasets import describe_datasets

    rows = describe_datasets()
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        state = "found" if row["found"] else "MISSING"
        splits = ",".join(row["splits"])
        print(f"{row['name']:<{width}}  {row['kind']:<8} {row['lang']:<9} {state:<8} {splits:<22} {row['url']}")
    return 0


def _build(args: argparse.Namespace) -> int:
    import json

    from kalbert.pretrain import DataBuildConfig, build_pretraining_data

    config = DataBuildConfig(
        vocab=args.vocab, inputs=args.input, out=args.out, max_seq_length=args.max_seq_length,
        short_seq_prob=args.short_seq_prob, heldout_fraction=args.heldout, max_documents=args.max_documents,
        single_sentence=args.single_sentence, seed=args.seed, processes=args.processes,
    )
    out = build_pretraining_data(config, overwrite=args.overwrite)
    meta = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))
    for split, info in meta["splits"].items():
        stats = meta["stats"][split]
        print(f"{split}: {info['instances']:,} instances, {info['tokens']:,} tokens from "
              f"{stats.get('documents', 0):,} documents ({stats.get('single_sentence_documents', 0):,} "
              f"with one sentence, {stats.get('random_b_instances', 0):,} random-B instances)")
    print(f"data: {out} ({meta['build_seconds']} s)")
    return 0
