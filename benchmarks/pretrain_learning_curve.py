"""Package a pretraining run's learning curves as committed evidence: JSON + PNG + Markdown with its commands.

    .venv/bin/python benchmarks/pretrain_learning_curve.py outputs/pretrain-tiny-ko

Reads the run folder that `kalbert pretrain` wrote (kalbert.json, metrics.jsonl) and the data and
vocabulary folders it names, and writes benchmarks/results/pretrain_learning_curve.{json,png,md}.
Nothing is recomputed: the numbers are the run's own held-out evaluations.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pretrain_runs import read_json

from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.pretrain.curves import METRICS, plot_curves, read_metrics
from kalbert.pretrain.data import PretrainingData
from kalbert.vocab.card import build_command

RESULTS = Path(__file__).parent / "results"
NAME = "pretrain_learning_curve"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="run folder of `kalbert pretrain`")
    parser.add_argument("--note", default="", help="conditions to record (machine, other jobs)")
    args = parser.parse_args()
    run = read_json(args.run / "kalbert.json")
    data = read_json(Path(run["config"]["data"]) / "kalbert.json")
    vocab = read_json(Path(run["config"]["data"]) / "vocab" / "kalbert.json")
    records = read_metrics(args.run / METRICS)
    train = [r for r in records if r["split"] == "train"]
    held = [r for r in records if r["split"] == "heldout"]
    seconds, seen = 0.0, 0
    for record in train:  # wall time from each logged window's tokens and tokens/s (windows include evaluations)
        seconds += (record["tokens_seen"] - seen) / record["tokens_per_s"]
        seen = record["tokens_seen"]
    commands = [build_command(vocab["config"]), data["command"], run["command"]]
    evaluated = PretrainingData.open(run["config"]["data"]).split("heldout")
    n = held[-1]["instances"] if held else 0
    majority = max(share := sum(evaluated[i].label for i in range(n)) / max(n, 1), 1 - share)
    report = {"commands": commands, "model": run["config"]["model"], "steps": train[-1]["step"] if train else 0,
              "tokens_seen": seen, "wall_seconds": round(seconds), "heldout_instances": n,
              "sop_majority_class_accuracy": majority, "heldout": held, "train": train, "note": args.note}
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / f"{NAME}.json", report)
    plot_curves(records, RESULTS / f"{NAME}.png", f"tiny ALBERT on kowiki: {seen / 1e6:.1f}M tokens")
    rows = ["| step | held-out MLM accuracy | held-out SOP accuracy | held-out loss | MLM perplexity |",
            "|---|---|---|---|---|"]
    rows += [f"| {r['step']} | {r['mlm_accuracy']:.4f} | {r['sop_accuracy']:.4f} | {r['loss']:.3f} | "
             f"{r['perplexity']:,.0f} |" for r in held]
    text = "\n".join([
        "# Learning curves: tiny ALBERT pretrained on Korean Wikipedia", "",
        "Produced by (vocabulary, data, pretraining):", "", "```", *commands, "```", "",
        f"{report['steps']} steps, {seen:,} training tokens, {seconds / 60:.0f} minutes of wall time "
        f"(evaluations included); held-out split: {report['heldout_instances']} instances from held-out documents "
        "(fixed masks at every evaluation). Always answering the majority SOP label scores "
        f"{majority:.4f} on these instances.", "", *rows, "", f"![learning curves]({NAME}.png)", "",
        *([f"Conditions: {args.note}", ""] if args.note else [])])
    atomic_write_text(RESULTS / f"{NAME}.md", text)
    print(text)


if __name__ == "__main__":
    main()
