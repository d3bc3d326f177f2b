"""`kalbert search build|query`."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from kalbert.cli.common import (
    add_config_arguments,
    add_noun,
    add_overwrite,
    add_verb,
    config_from_args,
    positive_int,
    probability,
)
from kalbert.precision import PRECISION_HELP, PRECISIONS
from kalbert.ranking import DENSE_WEIGHT
from kalbert.sentence import BACKENDS

HELP = "search documents: passages in an exact, HNSW, IVF-PQ or Milvus index, with optional BM25"
MODES = ("dense", "bm25", "hybrid")


def register(nouns) -> None:
    verbs = add_noun(nouns, "search", HELP,
                     "kalbert search build --corpus docs/ --out outputs/docs-index --lexical bm25\n"
                     '  kalbert search query --index outputs/docs-index "검색어" -k 5')

    build = add_verb(
        verbs, "build", "split documents into passages, encode them and index them (resumes after a kill)",
        "kalbert search build --corpus docs/ notes.jsonl --out outputs/docs-index --lexical bm25\n"
        "  kalbert search build --corpus kowiki --out outputs/kowiki-index --engine hnsw "
        "--model models/static-ko-zh-48k\n"
        "  kalbert search build --corpus korsts:test --out outputs/index-milvus --engine milvus "
        "--uri outputs/milvus.db\n"
        "  kalbert search build --corpus korsts:test --out outputs/index-int8 --model outputs/sbert-onnx "
        "--backend onnx-int8",
        _build)
    add_config_arguments(build, "kalbert.search.build:SearchBuildConfig")
    add_overwrite(build)

    query = add_verb(
        verbs, "query", "find the best passages of each query text",
        'kalbert search query --index outputs/docs-index "한 남자가 기타를 치고 있다." -k 5 --mode hybrid', _query)
    query.add_argument("--index", required=True, help="index folder from `kalbert search build`")
    query.add_argument("text", nargs="+", help="query texts")
    query.add_argument("-k", type=positive_int, default=10, help="hits per query")
    query.add_argument("--mode", choices=MODES,
                       help="dense, bm25 or hybrid (cosine and BM25 scores, each min-max normalised over the "
                            "candidates, mixed by --dense-weight); default: hybrid where the index has BM25, else "
                            "dense")
    query.add_argument("--dense-weight", type=probability, default=DENSE_WEIGHT,
                       help=f"the cosine's share of a hybrid score, BM25 having the rest (0: BM25's order, 1: "
                            f"the cosine's; default: {DENSE_WEIGHT}, picked on the QA sets' val questions)")
    query.add_argument("--model", help="the model folder that built the index, where it has moved (another model "
                                       "is refused)")
    query.add_argument("--backend", choices=BACKENDS,
                       help="torch, onnx or onnx-int8 (default: the backend that built the index)")
    query.add_argument("--precision", choices=PRECISIONS, default="auto",
                       help="how the torch backend encodes the queries: " + PRECISION_HELP)
    query.add_argument("--json", action="store_true", help="print JSON")


def _build(args: argparse.Namespace) -> int:
    from kalbert.search.build import build_index

    config = config_from_args(args)
    out = build_index(config, overwrite=args.overwrite)
    if config.shard:
        print(f"shard {config.shard}: vectors in {out}/shards; once every shard's files are there, rerun without "
              "--shard to build the index")
        return 0
    from kalbert.artifact import read_meta

    record = read_meta(out)
    print(f"index: {out} ({record['passages']} passages of {record['documents']} documents, {record['dim']} dims, "
          f"{record['engine']}{' + bm25' if record['lexical'] == 'bm25' else ''}, {record['seconds']['total']} s)")
    return 0


def _query(args: argparse.Namespace) -> int:
    from kalbert.search.index import search_index

    result = search_index(args.index, args.text, k=args.k, model=args.model, backend=args.backend,
                          precision=args.precision, mode=args.mode, dense_weight=args.dense_weight)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps({"queries": result.queries, "mode": result.mode, "engine": result.engine,
                          "model_backend": result.model_backend, "notes": result.notes,
                          "encode_ms": round(1000 * result.encode_seconds, 2),
                          "search_ms": round(1000 * result.search_seconds, 2),
                          "hits": [[asdict(h) for h in hits] for hits in result.hits]}, ensure_ascii=False, indent=2))
        return 0
    for query, hits in zip(result.queries, result.hits, strict=True):
        print(query)
        for hit in hits:
            print(f"  {hit.rank:>3}  {hit.score:.4f}  {hit.document} [{hit.start}:{hit.end}]  {hit.passage}")
    return 0
