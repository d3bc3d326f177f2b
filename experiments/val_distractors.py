"""What the val articles alone hide: each QA set's val questions ranked among the val articles' paragraphs (the
`--eval korquad:val` protocol until stop 69) and among the val and train articles' paragraphs together (since
then; the bench ranks a test question among every paragraph of the files, so a question competes with other
articles' paragraphs there too), and where each wrong first hit comes from.

Val questions only; no test question is read and no test paragraph is a candidate. Vectors come from the
retrieval benchmark's cache (`kalbert bench run --tasks retrieval` fills it), so a rerun encodes nothing.

    python experiments/val_distractors.py --models multilingual-e5-small models/sbert-ko-zh-retrieval \
        models/static-ko-zh-48k

Writes benchmarks/results/val_distractors.{json,md} (or --out PREFIX).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.bench.baselines import load_encoder
from kalbert.bench.metrics import ranking_metrics
from kalbert.bench.retrieval import dense_ranking
from kalbert.data import get_spec, load_qa
from kalbert.hardware import hardware_block
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.teachers.encoders import RoleEncoder, dense_vectors

SETS = ("korquad", "cmrc2018", "drcd")
CORPORA = {"val articles": ("val",), "val + train articles": ("val", "train")}


def distractor_rows(model: str) -> list[dict[str, Any]]:
    """One row per set and corpus: nDCG@10 / MRR@10 of the val questions, and the wrong first hits by article part."""
    encoder = load_encoder(model)
    rows = []
    for name in SETS:
        lang = get_spec(name).lang
        questions = load_qa(name, "val")
        part = {"val": {e.context for e in questions}, "train": {e.context for e in load_qa(name, "train")}}
        queries = dense_vectors(RoleEncoder(encoder, "query", lang), [e.question for e in questions])
        for corpus_name, splits in CORPORA.items():
            corpus = list(dict.fromkeys(text for split in splits for text in sorted(part[split])))
            place = {text: i for i, text in enumerate(corpus)}
            passages = dense_vectors(RoleEncoder(encoder, "passage", lang), corpus)
            gold = np.array([place[e.context] for e in questions])
            ranked = dense_ranking(queries, passages, min(100, len(corpus)))
            scores = ranking_metrics(ranked, gold)
            wrong = [corpus[i] for i, g in zip(ranked[:, 0], gold, strict=True) if i != g]
            rows.append({"model": model, "set": f"{name}:val", "corpus": corpus_name, "questions": len(questions),
                         "paragraphs": len(corpus), "ndcg_at_10": round(scores["ndcg_at_10"], 2),
                         "mrr_at_10": round(scores["mrr_at_10"], 2),
                         "wrong_first_hits": {split: sum(text in part[split] for text in wrong) for split in splits}})
    return rows


def markdown(rows: list[dict[str, Any]], command: str) -> str:
    lines = ["# Val questions among more paragraphs", "", f"`{command}`", "",
             "Each QA set's val questions ranked among the val articles' paragraphs, then among the val and train",
             "articles' paragraphs together. *wrong first hits*: questions whose first paragraph is not their own,",
             "by where that paragraph comes from (val articles / train articles).", "",
             "| model | set | corpus | paragraphs | nDCG@10 | MRR@10 | wrong first hits (val / train) |",
             "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        hits = r["wrong_first_hits"]
        lines.append(f"| {r['model']} | {r['set']} | {r['corpus']} | {r['paragraphs']:,} | {r['ndcg_at_10']:.2f} "
                     f"| {r['mrr_at_10']:.2f} | {hits['val']} / {hits.get('train', 0)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    example = "python experiments/val_distractors.py --models multilingual-e5-small models/sbert-ko-zh-retrieval"
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=f"example:\n  {example}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", required=True, help="teacher names or sentence-model folders")
    parser.add_argument("--out", default="benchmarks/results/val_distractors",
                        help="output prefix (.json and .md are added)")
    args = parser.parse_args(argv)
    command = shlex.join(["python", "experiments/val_distractors.py", *(argv if argv is not None else sys.argv[1:])])
    start = time.perf_counter()
    rows = [row for model in args.models for row in distractor_rows(model)]
    record = {"what": "val questions of the QA sets among val, then val + train articles' paragraphs",
              "command": command, "rows": rows, "hardware": hardware_block(),
              "wall_seconds": round(time.perf_counter() - start, 1)}
    out = Path(args.out)
    atomic_write_json(out.with_suffix(".json"), record)
    atomic_write_text(out.with_suffix(".md"), markdown(rows, command))
    print(markdown(rows, command))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
