"""`kalbert search build|query`."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from kalbert.cli.common import add_config_arguments, add_overwrite, add_verb, config_from_args, positive_int
from kalbert.precision import PRECISION_HELP, PRECISIONS
from kalbert.sentence import BACKENDS

HELP = "similarity search over a sentence corpus"


def register(nouns) -> None:
    from kalbert.sentence.search import SearchBuildConfig

    parser = nouns.add_parser("search", help=HELP)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    build = add_verb(
        verbs, "build", "encode a corpus into a search index (float16 embeddings on disk)",
        "kalbert search build --corpus korsts:test --out outputs/index-korsts\n"
        "  kalbert search build --model outputs/sbert-ko-tiny-onnx --corpus korsts:test --out outputs/index-korsts "
        "--backend onnx-int8",
        _build)
    add_config_arguments(build, SearchBuildConfig)
    add_overwrite(build)

    query = add_verb(
        verbs, "query", "find the nearest corpus sentences of each query text",
        'kalbert search query --index outputs/index-korsts "한 남자가 기타를 치고 있다." -k 5', _query)
    query.add_argument("--index", required=True, help="index folder from `kalbert search build`")
    query.add_argument("text", nargs="+", help="query texts")
    query.add_argument("-k", type=positive_int, default=10, help="hits per query")
    query.add_argument("--model", help="sentence model to encode queries (default: the one that built the index)")
    query.add_argument("--backend", choices=BACKENDS,
                       help="torch, onnx or onnx-int8 (default: the backend that built the index)")
    query.add_argument("--precision", choices=PRECISIONS, default="auto",
                       help="how the torch backend encodes the queries: " + PRECISION_HELP)
    query.add_argument("--json", action="store_true", help="print JSON")


def _build(args: argparse.Namespace) -> int:
    from kalbert.sentence.search import SearchIndex, build_index

    out = build_index(config_from_args(args), overwrite=args.overwrite)
    index = SearchIndex(out)
    print(f"index: {out} ({len(index)} sentences, {index.meta['dim']} dims, {index.meta['seconds']} s)")
    return 0


def _query(args: argparse.Namespace) -> int:
    from kalbert.sentence.search import search_index

    result = search_index(args.index, args.text, k=args.k, model=args.model, backend=args.backend,
                          precision=args.precision)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps({"queries": result.queries, "backend": result.backend,
                          "model_backend": result.model_backend, "notes": result.notes,
                          "hits": [[asdict(h) for h in hits] for hits in result.hits]}, ensure_ascii=False, indent=2))
        return 0
    for query, hits in zip(result.queries, result.hits, strict=True):
        print(query)
        for hit in hits:
            print(f"  {hit.rank:>3}  {hit.score:.4f}  {hit.sentence}")
    return 0
