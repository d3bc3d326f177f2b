"""Further-pretraining a transplant with and without the hidden-state distillation term, at equal budget.

    .venv/bin/python benchmarks/pretrain_distill.py \\
        --run "MLM+SOP=outputs/pt-mean-1k" --run "MLM+SOP+distillation=outputs/pt-mean-distill-1k"

Each ``--run NAME=FOLDER`` is a `kalbert pretrain` run folder; all runs share data and start from the same
transplant (their ``--init-from``), which is scored too as the step-0 reference, beside the teacher. Per
model: the run's held-out MLM and SOP curves (its own metrics.jsonl), and for the final model

- held-out MLM and SOP accuracy (the trainer's fixed masks),
- teacher cosine: the mean cosine between each held-out instance's mean last state and the teacher's
  embedding of the instance text (what the distillation term pulls up; 1 - the term),
- zero-shot STS: Spearman x100 of mean-pooled embeddings on KorSTS dev and stsb-zh dev (dev splits only).

Writes benchmarks/results/pretrain_distill.{json,md,png}.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
from pretrain_runs import named_run, read_json, score_heldout
from sts_dev import SETS, load_pairs, score
from transformers import AlbertConfig

from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.pretrain.config import run_bf16
from kalbert.pretrain.curves import heldout_with_tokens, plot_heldout_by_tokens
from kalbert.pretrain.data import PretrainingData
from kalbert.pretrain.presets import describe
from kalbert.pretrain.teacher_targets import teacher_bf16, teacher_targets
from kalbert.sentence.encoder import encode, load_sentence_model
from kalbert.teachers.backends import load_teacher

RESULTS = Path(__file__).parent / "results"
NAME = "pretrain_distill"


def _sts(model_dir: Path, pairs: dict[str, list]) -> dict[str, float | None]:
    model = load_sentence_model(model_dir, pooling="mean")
    return score(lambda sentences: encode(model, sentences, batch_size=64), pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=named_run, action="append", required=True, metavar="NAME=FOLDER",
                        help="a kalbert pretrain run folder and the name it gets in the table (repeatable)")
    parser.add_argument("--teacher", default="multilingual-e5-small",
                        help="the teacher the transplant came from (named teacher or SentenceTransformer folder)")
    parser.add_argument("--note", default="", help="conditions to record (machine, other jobs)")
    args = parser.parse_args()
    runs = dict(args.run)
    metas = {name: read_json(run / "kalbert.json") for name, run in runs.items()}
    shared = {(m["config"]["data"], m["config"]["init_from"]) for m in metas.values()}
    if len(shared) != 1:
        raise SystemExit(f"the runs differ in data or starting model: {sorted(shared)}")
    data_dir, init_from = shared.pop()
    data = PretrainingData.open(data_dir)
    hidden = read_json(Path(init_from) / "config.json")["hidden_size"]
    first_config = next(iter(metas.values()))["config"]
    bf16 = teacher_bf16(run_bf16(first_config))  # as the runs encoded it
    everything = {"heldout": np.arange(len(data.split("heldout")))}
    teacher = teacher_targets(args.teacher, data, everything, hidden, bf16=bf16)["heldout"]
    pairs = load_pairs()
    seed = first_config["seed"]
    heldout = everything["heldout"]
    start = Path(init_from)
    rows = {"transplant (step 0)": {"model": str(init_from), "tokens": 0,
                                    **score_heldout(start, first_config, data, heldout, seed, teacher=teacher),
                                    "sts": _sts(start, pairs)}}
    curves = {}
    for name, run in runs.items():
        curves[name] = heldout_with_tokens(run)
        rows[name] = {"model": str(run / "model"), "tokens": curves[name][-1]["tokens_seen"],
                      **score_heldout(run / "model", metas[name]["config"], data, heldout, seed, teacher=teacher),
                      "sts": _sts(run / "model", pairs)}
    reference = load_teacher(args.teacher)
    teacher_sts = score(reference.encode, pairs)
    report = {"commands": [read_json(data.folder / "kalbert.json")["command"], *(m["command"] for m in metas.values())],
              "model": describe(AlbertConfig.from_pretrained(init_from)), "teacher": args.teacher,
              "heldout_instances": len(data.split("heldout")), "rows": rows, "teacher_sts": teacher_sts,
              "heldout": curves, "load_average": os.getloadavg(), "note": args.note}
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / f"{NAME}.json", report)
    plot_heldout_by_tokens(curves, RESULTS / f"{NAME}.png",
                           "further-pretraining a transplant with and without distillation", full_scale=False)
    labels = [label for _, _, label in SETS]
    table = ["| model | training tokens | MLM acc | SOP acc | teacher cosine | " + " | ".join(labels) + " |",
             "|---|---:|---:|---:|---:|" + "---:|" * len(labels)]
    for name, row in rows.items():
        sts = " | ".join(f"{row['sts'][label]:.2f}" for label in labels)
        table.append(f"| {name} | {row['tokens'] / 1e6:.2f}M | {row['mlm_accuracy']:.4f} | {row['sop_accuracy']:.4f} "
                     f"| {row['teacher_cosine']:.4f} | {sts} |")
    table.append(f"| teacher ({args.teacher}) | - | - | - | 1 | "
                 + " | ".join(f"{teacher_sts[label]:.2f}" for label in labels) + " |")
    run_args = " ".join(f'--run "{name}={folder}"' for name, folder in runs.items())
    text = "\n".join([
        "# Further-pretraining a transplant with and without hidden-state distillation", "",
        "Produced by:", "", "```", *report["commands"], f"python benchmarks/{NAME}.py {run_args}", "```", "",
        f"Model: {report['model']}, from `{init_from}`. Held-out: all {report['heldout_instances']} instances (fixed "
        "masks). Teacher cosine: mean cosine between an instance's mean last state and the teacher's embedding of "
        "its text. STS: zero-shot Spearman x100 of mean-pooled embeddings, dev splits.", "",
        *table, "", f"![curves]({NAME}.png)", "",
        f"Conditions: {args.note} (load average when scoring: {report['load_average'][0]:.2f})", "",
    ])
    atomic_write_text(RESULTS / f"{NAME}.md", text)
    print(f"wrote {RESULTS / NAME}.{{json,md,png}}")


if __name__ == "__main__":
    main()
