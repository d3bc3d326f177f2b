"""`kalbert search build|query`."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from kalbert.cli.common import add_verb, positive_int
from kalbert.sentence import BACKENDS


def register(nouns) -> None:
    parser = nouns.add_parser("search", help="similarity search over a sentence corpus")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)

    build = add_verb(
        verbs, "build", "encode a corpus into a search index (float16 embeddings on disk)",
        "kalbert search build --corpus korsts:test --out outputs/index-korsts\n"
        "  kalbert search build --model outputs/sbert-ko-tiny-onnx --corpus korsts:test --out outputs/index-korsts "
        "--backend onnx-int8",
        _build)
    build.add_argument("--model", help="sentence-model folder (default: the shipped models/sbert-ko-zh-small)")
    build.add_argument("--corpus", required=True,
                       help="text file (one sentence per line) or data set, e.g. korsts:test, kowiki")
    build.add_argument("--out", required=True, help="index folder")
    build.add_argument("--batch-size", type=positive_int, default=128)
    build.add_argument("--max-sentences", type=positive_int, help="index at most N sentences")
    build.add_argument("--backend", choices=BACKENDS, default="torch",
                       help="run the model in PyTorch or from its ONNX files (kalbert sbert export --backend onnx)")
    build.add_argument("--overwrite", action="store_true")

    query = add_verb(
        verbs, "query", "find the nearest corpus sentences of each query text",
        'kalbert search query --index outputs/index-korsts "한 남자가 기타를 치고 있다." -k 5', _query)
    query.add_argument("--index", required=True, help="index folder from `kalbert search build`")
    query.add_argument("text", nargs="+", help="query texts")
    query.add_argument("-k", type=positive_int, default=10, help="hits per query")
    query.add_argument("--model", help="sentence model to encode queries (default: the one that built the index)")
    query.add_argument("--backend", choices=BACKENDS,
                       help="torch, onnx or onnx-int8 (default: the backend that built the index)")
    query.add_argument("--json", action="store_true", help="print JSON")


def _build(args: argparse.Namespace) -> int:
    from kalbert.sentence.encoder import default_sentence_model
    from kalbert.sentence.search import SearchBuildConfig, SearchIndex, build_index

    model = args.model or str(default_sentence_model())
    config = SearchBuildConfig(model=model, corpus=args.corpus, out=args.out, batch_size=args.batch_size,
                               max_sentences=args.max_sentences, backend=args.backend)
    out = build_index(config, overwrite=args.overwrite)
    index = SearchIndex(out)
    print(f"index: {out} ({len(index)} sentences, {index.meta['dim']} dims, {index.meta['seconds']} s)")
    return 0


def _query(args: argparse.Namespace) -> int:
    from kalbert.sentence.search import search_index

    result = search_index(args.index, args.text, k=args.k, model=args.model, backend=args.backend)
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
