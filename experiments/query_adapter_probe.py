"""Where a student's retrieval gap sits: a linear map on its question vectors alone, trained over frozen paragraph
vectors, against the whole train corpus at once.

If the student's paragraph vectors already separated topics as its teacher's do, a map on the query side, taught
with every train paragraph as a negative (the "batch of thousands" no CPU run can afford end to end) and the
teacher's scores over all of them, should close much of the gap. Two losses: cross-entropy of the question's own
paragraph among every train paragraph of its set; the same plus the KL divergence from the teacher's softmax over
them (temperature 0.01). The map starts as the identity; Adam, lr 3e-4, batches of 256 questions, 10 epochs.
Trained on train questions and train paragraphs only; scored on the val questions among the val and train
articles' paragraphs (the `--eval korquad:val` protocol). No test question is read. A probe: nothing it trains ships.

    python experiments/query_adapter_probe.py --models models/sbert-ko-zh-retrieval models/static-ko-zh-48k

Writes benchmarks/results/query_adapter_probe.{json,md} (or --out PREFIX). Vectors come from the retrieval
benchmark's cache; train questions are encoded once if missing.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional

from kalbert.bench.baselines import load_encoder
from kalbert.bench.metrics import ranking_metrics
from kalbert.bench.retrieval import dense_ranking
from kalbert.data import get_spec, load_qa
from kalbert.hardware import hardware_block
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.teachers.encoders import RoleEncoder, dense_vectors

SETS = ("korquad", "cmrc2018", "drcd")
TEACHER = "multilingual-e5-small"
EPOCHS, BATCH, LR, TEMPERATURE, SCALE = 10, 256, 3e-4, 0.01, 20.0
LOSSES = ("cross-entropy", "cross-entropy + teacher KL")


def set_vectors(encoder: Any, name: str) -> dict[str, Any]:
    """Train and val question vectors, val + train paragraph vectors (val first), and each question's paragraph."""
    lang = get_spec(name).lang
    train, val = load_qa(name, "train"), load_qa(name, "val")
    corpus = list(dict.fromkeys(t for part in (val, train) for t in sorted({e.context for e in part})))
    place = {text: i for i, text in enumerate(corpus)}
    queries = RoleEncoder(encoder, "query", lang)
    return {"val_paragraphs": len({e.context for e in val}),
            "passages": dense_vectors(RoleEncoder(encoder, "passage", lang), corpus),
            "train_queries": dense_vectors(queries, [e.question for e in train]),
            "val_queries": dense_vectors(queries, [e.question for e in val]),
            "train_gold": np.array([place[e.context] for e in train]),
            "val_gold": np.array([place[e.context] for e in val])}


def val_ndcg(adapter: torch.nn.Module, sets: dict[str, dict[str, Any]]) -> dict[str, float]:
    scores = {}
    with torch.no_grad():
        for name, v in sets.items():
            queries = functional.normalize(adapter(torch.from_numpy(v["val_queries"])), dim=-1).numpy()
            ranked = dense_ranking(queries, v["passages"], 100)
            scores[name] = round(ranking_metrics(ranked, v["val_gold"])["ndcg_at_10"], 2)
    return scores


def train_adapter(sets: dict[str, dict[str, Any]], teacher: dict[str, dict[str, Any]], loss_name: str
                  ) -> list[dict[str, Any]]:
    """Val nDCG@10 before training and after each epoch."""
    torch.manual_seed(0)
    dimension = next(iter(sets.values()))["passages"].shape[1]
    adapter = torch.nn.Linear(dimension, dimension, bias=False)
    torch.nn.init.eye_(adapter.weight)
    optimiser = torch.optim.Adam(adapter.parameters(), lr=LR)
    data = []
    for name, v in sets.items():
        first = v["val_paragraphs"]  # train paragraphs only are candidates in training
        t = teacher[name]
        target = torch.from_numpy(t["train_queries"]) @ torch.from_numpy(t["passages"][first:]).T / TEMPERATURE
        data.append((torch.from_numpy(v["train_queries"]), torch.from_numpy(v["passages"][first:]),
                     torch.from_numpy(v["train_gold"] - first), target.log_softmax(-1)))
    history = [{"epoch": 0, **val_ndcg(adapter, sets)}]
    for epoch in range(1, EPOCHS + 1):
        for queries, passages, gold, target in data:
            for rows in torch.randperm(len(queries)).split(BATCH):
                scores = functional.normalize(adapter(queries[rows]), dim=-1) @ passages.T * SCALE
                loss = functional.cross_entropy(scores, gold[rows])
                if loss_name != LOSSES[0]:
                    loss = loss + functional.kl_div(scores.log_softmax(-1), target[rows], reduction="batchmean",
                                                    log_target=True)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
        history.append({"epoch": epoch, **val_ndcg(adapter, sets)})
    return history


def probe_rows(models: list[str]) -> list[dict[str, Any]]:
    teacher_encoder = load_encoder(TEACHER)
    teacher = {name: set_vectors(teacher_encoder, name) for name in SETS}
    rows = [{"model": TEACHER, "loss": "none (the teacher itself)", "history": [{"epoch": 0, **{
        name: round(ranking_metrics(dense_ranking(t["val_queries"], t["passages"], 100), t["val_gold"])["ndcg_at_10"],
                    2) for name, t in teacher.items()}}]}]
    for model in models:
        encoder = load_encoder(model)
        sets = {name: set_vectors(encoder, name) for name in SETS}
        rows += [{"model": model, "loss": loss, "history": train_adapter(sets, teacher, loss)} for loss in LOSSES]
    return rows


def mean(entry: dict[str, Any]) -> float:
    return round(float(np.mean([entry[name] for name in SETS])), 2)


def markdown(rows: list[dict[str, Any]], command: str) -> str:
    lines = ["# A linear map on the question vectors alone", "", f"`{command}`", "",
             "Val nDCG@10 (x100) of each QA set's val questions among its val and train articles' paragraphs: before",
             "training the map (epoch 0), after the best epoch and after the last. Trained on train questions against",
             "every train paragraph; the paragraph vectors stay as the model makes them.", "",
             "| model | loss | epoch 0 (KorQuAD / CMRC 2018 / DRCD, mean) | best epoch | best | last (epoch 10) |",
             "|---|---|---|---:|---|---|"]
    for r in rows:
        history = r["history"]
        best = max(history, key=mean)

        def cell(entry: dict[str, Any]) -> str:
            return " / ".join(f"{entry[name]:.2f}" for name in SETS) + f" ({mean(entry):.2f})"

        lines.append(f"| {r['model']} | {r['loss']} | {cell(history[0])} | {best['epoch']} | {cell(best)} "
                     f"| {cell(history[-1])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    example = "python experiments/query_adapter_probe.py --models models/sbert-ko-zh-retrieval"
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=f"example:\n  {example}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", required=True, help="sentence-model folders")
    parser.add_argument("--out", default="benchmarks/results/query_adapter_probe",
                        help="output prefix (.json and .md are added)")
    args = parser.parse_args(argv)
    given = argv if argv is not None else sys.argv[1:]
    command = shlex.join(["python", "experiments/query_adapter_probe.py", *given])
    start = time.perf_counter()
    rows = probe_rows(args.models)
    record = {"what": "a linear query-side map over frozen paragraph vectors, trained against every train paragraph",
              "command": command, "settings": {"epochs": EPOCHS, "batch": BATCH, "lr": LR, "scale": SCALE,
                                                "teacher": TEACHER, "teacher_temperature": TEMPERATURE},
              "split": "val questions among val + train articles' paragraphs (nDCG@10 x100)", "rows": rows,
              "hardware": hardware_block(), "wall_seconds": round(time.perf_counter() - start, 1)}
    out = Path(args.out)
    atomic_write_json(out.with_suffix(".json"), record)
    atomic_write_text(out.with_suffix(".md"), markdown(rows, command))
    print(markdown(rows, command))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
