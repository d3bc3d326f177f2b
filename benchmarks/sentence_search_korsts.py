"""Paraphrase retrieval on KorSTS test with `kalbert search`: index every distinct sentence of
korsts:test, query with sentence1 of each near-paraphrase pair (gold score >= 4.5), and report where
sentence2 ranks (the query's own sentence is skipped). The API used is the one behind
`kalbert search build|query`.

    python benchmarks/sentence_search_korsts.py --model outputs/sbert-ko-tiny-kd-sts --index outputs/index-korsts-test

Writes benchmarks/results/sentence_search_korsts.{json,md} (or --out PREFIX).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kalbert.data import load_sts
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.search import Index, SearchBuildConfig, build_index

K = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--index", required=True, help="index folder (built from korsts:test when absent)")
    parser.add_argument("--min-score", type=float, default=4.5)
    parser.add_argument("--out", default="benchmarks/results/sentence_search_korsts")
    args = parser.parse_args()
    if not Path(args.index).exists():
        build_index(SearchBuildConfig(model=args.model, corpus="korsts:test", out=args.index))
    index = Index(args.index, args.model)
    pairs = [p for p in load_sts("korsts", "test") if p.score >= args.min_score and p.sentence1 != p.sentence2]
    result = index.query([p.sentence1 for p in pairs], k=K + 1)
    ranks = []
    for pair, hits in zip(pairs, result.hits, strict=True):
        others = [h.sentence for h in hits if h.sentence != pair.sentence1][:K]
        ranks.append(others.index(pair.sentence2) + 1 if pair.sentence2 in others else None)
    found = [r for r in ranks if r is not None]
    example = {"query": pairs[0].sentence1, "paraphrase": pairs[0].sentence2, "rank": ranks[0],
               "hits": [(h.rank, round(h.score, 4), h.sentence) for h in result.hits[0][:5]]}
    summary = {
        "command": f"python benchmarks/sentence_search_korsts.py --model {args.model} --index {args.index}",
        "cli": f'kalbert search query --index {args.index} "{pairs[0].sentence1}" -k {K}',
        "split": "korsts:test", "model": args.model, "corpus_sentences": len(index), "pairs": len(pairs),
        "min_score": args.min_score, "backend": result.engine,
        "recall_at_1": round(sum(r == 1 for r in found) / len(pairs), 4),
        "recall_at_10": round(len(found) / len(pairs), 4), "example": example,
    }
    atomic_write_json(f"{args.out}.json", summary)
    lines = ["# Paraphrase retrieval on KorSTS test", "", f"`{summary['command']}`", "",
             f"{len(pairs)} pairs with gold score >= {args.min_score}; corpus: the {len(index)} distinct "
             f"korsts:test sentences; backend {result.engine}.", "",
             f"- paraphrase at rank 1: {100 * summary['recall_at_1']:.1f}%",
             f"- paraphrase in top {K}: {100 * summary['recall_at_10']:.1f}%", "",
             f"Example: `{summary['cli']}`", ""]
    lines += [f"    {rank:>2}  {score:.4f}  {text}" for rank, score, text in example["hits"]]
    atomic_write_text(f"{args.out}.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
