"""`kalbert search build|query|add|delete|compact`."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from kalbert.cli.common import (
    add_noun,
    add_overwrite,
    add_verb,
    config_from_args,
    positive_int,
    probability,
)
from kalbert.errors import KalbertError
from kalbert.precision import PRECISION_HELP, PRECISIONS
from kalbert.ranking import DENSE_WEIGHT
from kalbert.search.reranking import RERANK_DEPTH
from kalbert.sentence import BACKENDS

HELP = "search documents: passages in an exact, HNSW, IVF-PQ or Milvus index, with optional BM25"
MODES = ("dense", "bm25", "hybrid")
QUERY_BATCH = 32
"""queries read from a file are answered (and printed) this many at a time"""


class DeprecatedAlias(argparse.Action):
    """A flag's old name: it sets the new flag's value and says so in one line on stderr."""

    def __init__(self, option_strings: list[str], dest: str, new: str, why: str, **kwargs: Any) -> None:
        self.new, self.why = new, why
        super().__init__(option_strings, dest, help=f"deprecated: {new} ({why})", **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"kalbert: warning: {option_string} is deprecated, use {self.new} ({self.why})", file=sys.stderr)
        setattr(namespace, self.dest, values)


REFINE_WHY = "IVF-PQ's re-scoring is faiss's refine; --rerank-model is cross-encoder reranking"


def register(nouns) -> None:
    verbs = add_noun(nouns, "search", HELP,
                     "kalbert search build --corpus docs/ --out outputs/docs-index --lexical bm25\n"
                     '  kalbert search query --index outputs/docs-index "검색어" -k 5\n'
                     "  kalbert search add --index outputs/docs-index new-docs.jsonl\n"
                     "  kalbert search delete --index outputs/docs-index doc-17")

    build = add_verb(verbs, "search build", _build)
    build.add_argument("--rerank", dest="refine", type=positive_int, default=argparse.SUPPRESS, metavar="N",
                       action=DeprecatedAlias, new="--refine", why=REFINE_WHY)
    add_overwrite(build)
    _register_query(verbs)

    add = add_verb(verbs, "search add", _add)
    add.add_argument("--index", required=True, help="index folder from `kalbert search build`")
    add.add_argument("sources", nargs="+", help="JSONL files (id, text, other fields as metadata), folders or text "
                                                "files, as `search build --corpus` reads them")

    delete = add_verb(verbs, "search delete", _delete)
    delete.add_argument("--index", required=True, help="index folder from `kalbert search build`")
    delete.add_argument("ids", nargs="+", help="document ids")

    compact = add_verb(verbs, "search compact", _compact)
    compact.add_argument("--index", required=True, help="index folder from `kalbert search build`")


def _register_query(verbs) -> None:
    query = add_verb(verbs, "search query", _query)
    query.add_argument("--index", required=True, help="index folder from `kalbert search build`")
    query.add_argument("text", nargs="*", help="query texts (or --queries)")
    query.add_argument("--queries", metavar="FILE", help="read queries from FILE (- for stdin): JSONL lines with a "
                                                         "'query' field (an 'id' is echoed), or plain lines")
    query.add_argument("-k", type=positive_int, default=10, help="hits per query")
    query.add_argument("--mode", choices=MODES,
                       help="dense, bm25 or hybrid (cosine and BM25 scores, each min-max normalised over the "
                            "candidates, mixed by --dense-weight); default: hybrid where the index has BM25, else "
                            "dense")
    query.add_argument("--dense-weight", type=probability, default=DENSE_WEIGHT,
                       help=f"the cosine's share of a hybrid score, BM25 having the rest (0: BM25's order, 1: "
                            f"the cosine's; default: {DENSE_WEIGHT}, picked on the QA sets' val questions)")
    query.add_argument("--filter", action="append", metavar="FIELD=VALUE",
                       help="keep documents whose metadata FIELD holds VALUE (repeat a field for any of its values; "
                            'or one JSON object like \'{"year": {"in": [2020, 2021]}}\')')
    query.add_argument("--min-score", type=float, help="leave out hits scored below this (the score they are "
                                                       "ranked by: cosine, BM25, hybrid mix or reranker)")
    query.add_argument("--one-per-document", action="store_true", help="each document's best passage only")
    query.add_argument("--rerank-model", metavar="FOLDER",
                       help="cross-encoder reranker that scores the first --rerank-depth passages again (`kalbert "
                            "rerank train`); none: no reranking (default: models/rerank-ko-zh-small where it exists)")
    query.add_argument("--rerank-depth", type=positive_int, default=RERANK_DEPTH,
                       help="passages the reranker reads per query")
    query.add_argument("--refine", type=positive_int, metavar="N",
                       help="IVF-PQ: candidates per hit re-scored against the float16 vectors (default: the index's)")
    query.add_argument("--rerank", dest="refine", type=positive_int, metavar="N", action=DeprecatedAlias,
                       new="--refine", why=REFINE_WHY)
    query.add_argument("--model", help="the model folder that built the index, where it has moved (another model "
                                       "is refused)")
    query.add_argument("--backend", choices=BACKENDS,
                       help="torch, onnx or onnx-int8 (default: the backend that built the index)")
    query.add_argument("--precision", choices=PRECISIONS, default="auto",
                       help="how the torch backend encodes the queries: " + PRECISION_HELP)
    output = query.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print one JSON document")
    output.add_argument("--jsonl", action="store_true", help="print one JSON line per query, as it is answered")


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


def _read_queries(source: str) -> Iterator[dict[str, Any]]:
    """Queries from a file or stdin: JSONL lines with ``query`` (and an optional ``id``), or plain lines."""
    from kalbert.io import open_text

    lines = (line.rstrip("\r\n") for line in sys.stdin) if source == "-" else open_text(source)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if not line.lstrip().startswith("{"):
            yield {"query": line.strip()}
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise KalbertError(f"{source} line {number} is not JSON ({exc.msg})",
                               'give {"query": "..."} lines, or one plain query per line') from None
        if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item["query"].strip():
            raise KalbertError(f"{source} line {number} has no 'query' text", 'give {"query": "...", "id": ...}')
        yield item


def _hit_text(hit) -> str:
    """A hit on one line: rank, score (and the scores behind it), document, offsets, passage."""
    parts = ", ".join(f"{name} {value:.4f}" for name, value in list(hit.scores.items())[1:])
    return (f"  {hit.rank:>3}  {hit.score:.4f}{f' ({parts})' if parts else ''}  {hit.document} "
            f"[{hit.start}:{hit.end}]  {hit.passage}")


def _query(args: argparse.Namespace) -> int:
    from kalbert.search.filters import cli_filter
    from kalbert.search.index import open_index
    from kalbert.search.reranking import default_reranker

    if bool(args.text) == bool(args.queries):
        raise KalbertError("give query texts or --queries FILE, not both" if args.text else "no query given",
                           'e.g. kalbert search query --index DIR "검색어", or --queries questions.jsonl')
    rerank = default_reranker() if args.rerank_model is None else args.rerank_model
    options = {"filter": cli_filter(args.filter) if args.filter else None, "min_score": args.min_score,
               "one_per_document": args.one_per_document, "refine": args.refine,
               "rerank": None if str(rerank).lower() == "none" else rerank, "rerank_depth": args.rerank_depth}
    items = _read_queries(args.queries) if args.queries else ({"query": text} for text in args.text)
    index = open_index(args.index, model=args.model, backend=args.backend, precision=args.precision)
    results = []
    while batch := list(itertools.islice(items, QUERY_BATCH)):
        result = index.query([item["query"] for item in batch], k=args.k, mode=args.mode,
                             dense_weight=args.dense_weight, **options)
        for note in result.notes:
            print(f"note: {note}", file=sys.stderr)
        if args.jsonl:
            for item, hits in zip(batch, result.hits, strict=True):
                line = {**({"id": item["id"]} if "id" in item else {}), "query": item["query"],
                        "hits": [asdict(hit) for hit in hits]}
                print(json.dumps(line, ensure_ascii=False), flush=True)
        elif args.json:
            results.append(result)
        else:
            for query, hits in zip(result.queries, result.hits, strict=True):
                print(query)
                for hit in hits:
                    print(_hit_text(hit))
    if args.json:
        first = results[0]
        print(json.dumps({"queries": [q for r in results for q in r.queries], "mode": first.mode,
                          "engine": first.engine, "model_backend": first.model_backend, "reranker": first.reranker,
                          "notes": [n for r in results for n in r.notes],
                          "encode_ms": round(1000 * sum(r.encode_seconds for r in results), 2),
                          "search_ms": round(1000 * sum(r.search_seconds for r in results), 2),
                          "hits": [[asdict(h) for h in hits] for r in results for hits in r.hits]},
                         ensure_ascii=False, indent=2))
    return 0


def _add(args: argparse.Namespace) -> int:
    from kalbert.search.documents import read_documents
    from kalbert.search.index import open_index

    index = open_index(args.index)
    statuses = index.add(list(read_documents(args.sources)))
    added = sum(s["status"] == "added" for s in statuses)
    print(f"{args.index}: {added} documents added, {len(statuses) - added} replaced "
          f"({sum(s['passages'] for s in statuses)} passages); it holds {index.documents} documents, "
          f"{len(index)} passages")
    return 0


def _delete(args: argparse.Namespace) -> int:
    from kalbert.search.index import open_index

    index = open_index(args.index)
    statuses = index.delete(args.ids)
    print(f"{args.index}: {len(statuses)} documents deleted; it holds {index.documents} documents, "
          f"{len(index)} passages")
    return 0


def _compact(args: argparse.Namespace) -> int:
    from kalbert.search.index import open_index

    stats = open_index(args.index).compact()
    if not stats["compacted"]:
        print(f"{args.index}: nothing to compact (no document was added or deleted since its engine was built)")
        return 0
    print(f"{args.index}: generation {stats['generation']}, {stats['passages']} passages of {stats['documents']} "
          f"documents ({stats['deleted_passages']} deleted passages dropped, {stats['added_documents']} added "
          f"documents folded in, {stats['seconds']} s)")
    return 0
