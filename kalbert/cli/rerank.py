"""`kalbert rerank train|score|export`: a Korean + Chinese cross-encoder reranker."""

from __future__ import annotations

import argparse
import json
import sys

from kalbert.cli.common import add_noun, add_overwrite, add_verb, config_from_args, positive_int
from kalbert.precision import PRECISION_HELP, PRECISIONS

HELP = "rerank passages: train a cross-encoder reranker, score (query, passages) JSONL, export it for shipping"


def register(nouns) -> None:
    from kalbert.onnx_files import INT8_CONFIGS
    from kalbert.rerank.model import BACKENDS

    verbs = add_noun(nouns, "rerank", HELP, "kalbert rerank train --model models/qa-ko-zh-small --out outputs/rerank\n"
                     "  kalbert rerank score --model outputs/rerank --input pairs.jsonl")

    add_overwrite(add_verb(verbs, "rerank train", _train))
    score = add_verb(verbs, "rerank score", _score)
    score.add_argument("--model", required=True, help="a reranker folder (`kalbert rerank train`, or any "
                       "sentence-transformers CrossEncoder folder)")
    score.add_argument("--input", required=True, help='JSONL, one {"query": ..., "passages": [...]} per line')
    score.add_argument("--out", help="write the scored lines here instead of stdout")
    score.add_argument("--backend", choices=BACKENDS, default="torch",
                       help="torch (default), or the folder's ONNX file (`kalbert rerank export --onnx [--int8]`)")
    score.add_argument("--precision", choices=PRECISIONS, default="auto", help=PRECISION_HELP)
    score.add_argument("--batch-size", type=positive_int, default=32, help="pairs per forward pass")
    score.add_argument("--overwrite", action="store_true", help="replace an existing --out file")

    export = add_verb(verbs, "rerank export", _export)
    export.add_argument("--model", required=True, help="a reranker folder")
    export.add_argument("--out", required=True, help="the copy")
    export.add_argument("--onnx", action="store_true", help="also write onnx/model.onnx (fp32)")
    export.add_argument("--int8", action="store_true", help="also write the int8 ONNX file (with --onnx)")
    export.add_argument("--int8-config", choices=INT8_CONFIGS,
                        help="the int8 preset (default: this CPU's best)")
    export.add_argument("--hybrid-score-weight", type=float, metavar="A",
                        help="record how much a hybrid first stage's scores count beside the reranker's in search "
                             "(score fusion; e.g. 1.0, chosen on dev); default: the folder's own")
    export.add_argument("--windows-per-passage", type=positive_int, metavar="K",
                        help="record how many windows of a long passage scoring reads, those sharing most query "
                             "tokens (e.g. 1, chosen on dev); default: the folder's own")
    export.add_argument("--window-tokens", type=positive_int, metavar="N",
                        help="record the pair length scoring reads a long passage in, windows overlapping by a "
                             "quarter (e.g. 128, chosen on dev); default: the folder's own")
    add_overwrite(export)


def _train(args: argparse.Namespace) -> int:
    from kalbert.rerank import train_reranker

    config = config_from_args(args)
    record = train_reranker(config, overwrite=args.overwrite)
    evaluation = record["evaluation"]
    for row in evaluation["sets"]:
        print(f"{row['data']}: nDCG@10 {row['first_stage']['ndcg_at_10']:.2f} ({evaluation['first_stage']}) -> "
              f"{row['reranked']['ndcg_at_10']:.2f} (rerank@{evaluation['depth']}; n={row['questions']})")
    print(f"step {record['selected_step']} of {record['steps']} kept; {record['train_rows']:,} training questions")
    print(f"wrote {config.out}")
    return 0


def _score(args: argparse.Namespace) -> int:
    from kalbert.io import atomic_write_text
    from kalbert.rerank.model import load_reranker
    from kalbert.rerank.score import read_requests, score_requests

    requests = read_requests(args.input)  # every line checked before the model loads
    reranker = load_reranker(args.model, args.backend, args.precision, args.batch_size)
    lines = (json.dumps(item, ensure_ascii=False) + "\n" for item in score_requests(reranker, requests))
    if args.out:
        atomic_write_text(args.out, "".join(lines))
        print(f"wrote {len(requests)} scored queries to {args.out}", file=sys.stderr)
    else:
        sys.stdout.writelines(lines)
    return 0


def _export(args: argparse.Namespace) -> int:
    from kalbert.rerank import export_reranker

    record = export_reranker(args.model, args.out, args.onnx, args.int8, args.int8_config, args.overwrite,
                             args.hybrid_score_weight, args.windows_per_passage, args.window_tokens)
    files = ", ".join((record.get("onnx") or {}).get("files", {}).values())
    print(f"wrote {args.out}: float16 weights{f', {files}' if files else ''}")
    return 0
