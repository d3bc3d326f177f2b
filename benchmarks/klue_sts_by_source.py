"""KLUE-STS dev by source: where a sentence model loses to its teacher on the Korean set no training split resembles.

    .venv/bin/python benchmarks/klue_sts_by_source.py --model multilingual-e5-small --model models/sbert-ko-zh-small

KLUE-STS mixes three sources (Airbnb reviews, policy news, ParaKQC smart-device questions and commands), each
with round-trip-translated pairs (``-rtt``: mostly paraphrases) and sampled pairs (``-sampled``: mostly
different sentences on one topic). The overall Spearman hides which source a model gets wrong; this script
scores each source and each of its halves. Each --model is a sentence-model folder or a baseline name that
`kalbert bench run` takes. Writes benchmarks/results/klue_sts_by_source.{json,md}, or NAME.{json,md} with
--name, so that a run on a machine without an earlier run's folders keeps that run's files.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections import defaultdict
from pathlib import Path

from kalbert.bench.baselines import load_encoder
from kalbert.bench.metrics import paired_cosine, spearman
from kalbert.data import data_path
from kalbert.hardware import describe_cpu, hardware_block
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.sentence.encoder import unique_rows

RESULTS = Path(__file__).parent / "results"
NAME = "klue_sts_by_source"


def _groups(rows: list[dict]) -> dict[str, list[int]]:
    """Row indices of all pairs, of each source (airbnb, policy, paraKQC) and of each source's halves."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        groups["all"].append(i)
        groups[row["source"].split("-")[0]].append(i)
        groups[row["source"]].append(i)
    return dict(sorted(groups.items(), key=lambda item: (item[0] != "all", "-" in item[0], item[0])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", required=True, help="sentence-model folder or baseline name")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--name", default=NAME, help=f"results file stem under benchmarks/results (default: {NAME})")
    args = parser.parse_args()
    (path,) = data_path("klue-sts", "dev")
    rows = json.loads(path.read_text(encoding="utf-8"))
    gold = [row["labels"]["label"] for row in rows]
    groups = _groups(rows)
    load_before = os.getloadavg()
    scores = {}
    for model in args.model:
        encoder = load_encoder(model, batch_size=args.batch_size)

        def embed(sentences: list[str], encoder=encoder):
            return encoder.encode(sentences, "ko")

        cosine = paired_cosine(unique_rows(embed, [r["sentence1"] for r in rows]),
                               unique_rows(embed, [r["sentence2"] for r in rows]))
        scores[model] = {name: spearman([cosine[i] for i in idx], [gold[i] for i in idx])
                         for name, idx in groups.items()}
    report = {"command": shlex.join([sys.executable.rsplit("/", 1)[-1], *sys.argv]), "split": "klue-sts:dev",
              "pairs": {name: len(idx) for name, idx in groups.items()}, "spearman_x100": scores,
              "load_average_before": load_before, "load_average_after": os.getloadavg(),
              "hardware": hardware_block()}
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / f"{args.name}.json", report)
    table = ["| model | " + " | ".join(f"{name} ({len(idx)})" for name, idx in groups.items()) + " |",
             "|---|" + "---:|" * len(groups)]
    table += [f"| {model} | " + " | ".join(f"{value:.2f}" for value in by_group.values()) + " |"
              for model, by_group in scores.items()]
    text = "\n".join([
        "# KLUE-STS dev by source", "", "```", report["command"], "```", "",
        f"Cosine Spearman x100 on KLUE-STS dev (519 pairs; pairs per group in brackets), "
        f"{describe_cpu(report['hardware'])}; load average before/after: {load_before[0]:.2f} / "
        f"{report['load_average_after'][0]:.2f}.", "", *table, ""])
    atomic_write_text(RESULTS / f"{args.name}.md", text)
    print(text)


if __name__ == "__main__":
    main()
