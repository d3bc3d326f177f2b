"""How a teacher's margin shapes mined hard negatives: for each QA set's train questions, how many paragraphs of
the train articles the teacher scores at or above ``margin`` x its score for the question's own paragraph (the
ones `kalbert sbert train --negative-miner` passes over as likely answers), and where the negative it picks ranks.

Train questions only (the same rows the miner reads); no dev, val or test split is read, and no model is
trained. The teacher's vectors come from the retrieval benchmark's cache, so a rerun encodes nothing.

    python experiments/negative_margin.py --teacher multilingual-e5-small

Writes benchmarks/results/negative_margin.{json,md} (or --out PREFIX).
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
from kalbert.data import get_spec
from kalbert.hardware import hardware_block
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.rows.negatives import pick_negatives
from kalbert.rows.question_passages import load_qa_triplets
from kalbert.teachers.encoders import RoleEncoder, dense_vectors

SETS = ("korquad", "cmrc2018", "drcd")
MARGINS = (0.95, 0.97, 0.98, 0.99, 1.0)


def margin_rows(teacher: str, sets: tuple[str, ...], margins: tuple[float, ...]) -> list[dict[str, Any]]:
    """One row per set and margin: paragraphs passed over per question, and the picked negative's median rank."""
    encoder = load_encoder(teacher)
    rows = []
    for name in sets:
        triplets = load_qa_triplets(name, "train")
        lang = get_spec(name).lang
        paragraphs = list(dict.fromkeys(positive for _, positive, _ in triplets))
        place = {text: i for i, text in enumerate(paragraphs)}
        passages = dense_vectors(RoleEncoder(encoder, "passage", lang), paragraphs)
        queries = dense_vectors(RoleEncoder(encoder, "query", lang), [question for question, _, _ in triplets])
        positives = np.array([place[positive] for _, positive, _ in triplets])
        scores = queries @ passages.T
        own = scores[np.arange(len(triplets)), positives]
        others = scores.copy()
        others[np.arange(len(triplets)), positives] = -np.inf
        cosines = {"own_paragraph_median_cosine": round(float(np.median(own)), 4),
                   "best_other_median_cosine": round(float(np.median(others.max(axis=1))), 4)}
        for margin in margins:
            picked, skipped = pick_negatives(queries, passages, positives, margin)
            found = picked >= 0
            rank = (scores[found] > scores[found, picked[found]][:, None]).sum(axis=1) + 1  # 1 = the top paragraph
            rows.append({"set": f"{name}:train", "questions": len(triplets), "paragraphs": len(paragraphs),
                         "margin": margin, "passed_over_per_question": round(skipped / len(triplets), 2),
                         "median_rank_of_negative": float(np.median(rank)),
                         "without_negative": int((~found).sum()),
                         "teacher_ranks_own_first": round(float((scores.max(axis=1) <= own).mean()), 4), **cosines})
    return rows


def markdown(rows: list[dict[str, Any]], teacher: str, command: str) -> str:
    lines = [f"# Mined negatives by margin ({teacher})", "", f"`{command}`", "",
             "Train questions of each QA set against every paragraph of its train articles. *passed over*: paragraphs",
             "the teacher scores at or above margin x the question's own paragraph, per question; *rank*: where the",
             "picked negative sits in the teacher's ranking of all paragraphs (1 = top); the median cosine of the",
             "question's own paragraph and of the best other one show how close together the teacher's scores sit.", "",
             "| set | margin | passed over per question | median rank of the negative | without a negative "
             "| own paragraph cosine | best other cosine |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['set']} | {r['margin']:.2f} | {r['passed_over_per_question']} | {r['median_rank_of_negative']:g} "
              f"| {r['without_negative']} | {r['own_paragraph_median_cosine']} | {r['best_other_median_cosine']} |"
              for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    example = "python experiments/negative_margin.py --teacher multilingual-e5-small"
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=f"example:\n  {example}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher", default="multilingual-e5-small", help="the miner (a teacher name or folder)")
    parser.add_argument("--out", default="benchmarks/results/negative_margin",
                        help="output prefix (.json and .md are added)")
    args = parser.parse_args(argv)
    command = shlex.join(["python", "experiments/negative_margin.py", *(argv if argv is not None else sys.argv[1:])])
    start = time.perf_counter()
    rows = margin_rows(args.teacher, SETS, MARGINS)
    record = {"what": "mined-negative statistics per margin on QA train questions (kalbert.rows.negatives)",
              "teacher": args.teacher, "command": command, "rows": rows, "hardware": hardware_block(),
              "wall_seconds": round(time.perf_counter() - start, 1)}
    out = Path(args.out)
    atomic_write_json(out.with_suffix(".json"), record)
    atomic_write_text(out.with_suffix(".md"), markdown(rows, args.teacher, command))
    print(markdown(rows, args.teacher, command))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
