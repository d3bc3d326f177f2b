"""Does removing a sentence model's common directions help it? A probe, decided on dev splits only.

Static and distilled sentence models often share a few directions across every text (a mean vector, a top
principal component), and removing them has helped averaged word vectors on STS (Arora et al.'s common component,
Mu and Viswanath's "all-but-the-top"). The map is linear, so for a static model (a mean of piece vectors) it could
be baked into the piece vectors at no cost per text. Here it is measured on the model's vectors: the mean and the
top principal directions of ``--sample`` corpus sentences (drawn as corpus distillation draws them, no evaluation
sentence), then, for each setting (centre or not, k directions removed), the six checkpoint-picking dev scores
(STS dev Spearman, the QA sets' val nDCG@10 among val and train paragraphs, the model's prompts). Each text is
encoded once. No test split is read; nothing it measures ships.

    python experiments/common_components_probe.py models/static-ko-zh-48k \\
        --out benchmarks/results/common_components_static

Writes PREFIX.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from kalbert.bench.metrics import ranking_metrics
from kalbert.bench.retrieval import dense_ranking
from kalbert.data import load_sts
from kalbert.hardware import describe_cpu, hardware_block
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.sentence.evaluate import parse_dev_ref, retrieval_evaluator
from kalbert.teachers.corpus import sample_sentences

STS_REFS = ("korsts:dev", "stsb-zh:dev", "cnsd-stsb:dev")
RETRIEVAL_REFS = ("korquad:val", "cmrc2018:val", "drcd:val")
CORPORA = ["kowiki", "nsmc", "zh-laws", "zh-clue"]
REMOVED = (0, 1, 2, 3, 5, 8)


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


class Projection:
    """x -> (x - mean) with its top-k principal directions (of the sample) taken out."""

    def __init__(self, sample: np.ndarray) -> None:
        self.mean = sample.mean(axis=0)
        self.directions = np.linalg.svd(sample - self.mean, full_matrices=False)[2]

    def __call__(self, vectors: np.ndarray, center: bool, k: int) -> np.ndarray:
        moved = vectors - self.mean if center else vectors
        top = self.directions[:k]
        return unit(moved - (moved @ top.T) @ top)


def encoded_dev(model: Any) -> dict[str, Any]:
    """Each dev split's vectors, encoded once: STS pair sides, or val questions and every candidate paragraph."""
    encoded: dict[str, Any] = {}
    for ref in STS_REFS:
        pairs = load_sts(*parse_dev_ref(ref))
        encoded[ref] = ([model.encode([p.sentence1 for p in pairs], batch_size=64),
                         model.encode([p.sentence2 for p in pairs], batch_size=64)], [p.score for p in pairs])
    for ref in RETRIEVAL_REFS:
        evaluator = retrieval_evaluator(ref)  # its queries and corpus are lists beside their ids
        place = {pid: i for i, pid in enumerate(evaluator.corpus_ids)}
        gold = np.array([place[next(iter(evaluator.relevant_docs[q]))] for q in evaluator.queries_ids])
        encoded[ref] = ([model.encode_query(evaluator.queries, batch_size=64),
                         model.encode_document(evaluator.corpus, batch_size=16)], gold)
    return encoded


def scores(encoded: dict[str, Any], transform: Any) -> dict[str, float]:
    out = {}
    for ref, ((left, right), gold) in encoded.items():
        a, b = transform(left), transform(right)
        if ref in STS_REFS:
            out[ref] = round(100 * float(spearmanr(np.sum(a * b, axis=1), gold).statistic), 2)
        else:
            out[ref] = round(ranking_metrics(dense_ranking(a, b, 100), gold)["ndcg_at_10"], 2)
    return out


def markdown(report: dict[str, Any]) -> str:
    lines = ["# Common directions removed from a sentence model's vectors", "",
             f"`{report['command']}` on {describe_cpu(report['hardware'])}, load average {report['load_avg'][0]} "
             f"before / {report['load_avg'][1]} after. Dev splits only (x100: STS Spearman, val nDCG@10); mean "
             f"and directions from {report['sample_sentences']:,} corpus sentences (mean pairwise cosine "
             f"{report['sample_mean_cosine']}).", "",
             "| centred | directions removed | " + " | ".join(list(STS_REFS) + list(RETRIEVAL_REFS)) +
             " | STS mean | retrieval mean |", "|---|---:|" + "---:|" * 8]
    for row in report["settings"]:
        s = row["scores"]
        lines.append(f"| {'yes' if row['center'] else 'no'} | {row['k']} | " +
                     " | ".join(f"{s[r]:.2f}" for r in list(STS_REFS) + list(RETRIEVAL_REFS)) +
                     f" | {row['sts_mean']:.2f} | {row['retrieval_mean']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("model", help="a sentence-model folder")
    parser.add_argument("--sample", type=int, default=20000, help="corpus sentences the directions come from")
    parser.add_argument("--seed", type=int, default=76)
    parser.add_argument("--out", default="benchmarks/results/common_components")
    args = parser.parse_args()
    from sentence_transformers import SentenceTransformer

    load_before = round(os.getloadavg()[0], 2)
    model = SentenceTransformer(args.model, device="cpu", local_files_only=True)
    sample = model.encode(sample_sentences(CORPORA, args.sample, seed=args.seed).all(), batch_size=256)
    first = unit(sample[:2000])
    projection, encoded = Projection(sample), encoded_dev(model)
    settings = []
    for center in (False, True):
        for k in REMOVED:
            s = scores(encoded, lambda v, c=center, n=k: projection(v, c, n))
            settings.append({"center": center, "k": k, "scores": s,
                             "sts_mean": round(float(np.mean([s[r] for r in STS_REFS])), 2),
                             "retrieval_mean": round(float(np.mean([s[r] for r in RETRIEVAL_REFS])), 2)})
    report = {"command": "python experiments/common_components_probe.py " + shlex.join(sys.argv[1:]),
              "model": args.model, "max_seq_length": model.max_seq_length, "sample_sentences": len(sample),
              "sample_seed": args.seed, "sample_corpora": CORPORA,
              "sample_mean_cosine": round(float((first @ first.T).mean()), 3), "settings": settings,
              "hardware": hardware_block(), "load_avg": [load_before, round(os.getloadavg()[0], 2)]}
    atomic_write_json(Path(f"{args.out}.json"), report)
    atomic_write_text(Path(f"{args.out}.md"), markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
