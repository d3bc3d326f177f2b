"""Do two pretraining runs learn the same? Their held-out curves side by side, to show a speed-up changes no result.

    kalbert pretrain --preset tiny --data outputs/data-ko-zh --out outputs/tp-curve-padded-fp32 --max-steps 300 \\
        --batch-size 32 --eval-every 50 --eval-instances 1000 --no-pack --no-bf16
    kalbert pretrain --preset tiny --data outputs/data-ko-zh --out outputs/tp-curve-defaults --max-steps 300 \\
        --batch-size 32 --eval-every 50 --eval-instances 1000
    .venv/bin/python benchmarks/pretrain_loss_parity.py outputs/tp-curve-padded-fp32 outputs/tp-curve-defaults

Same seed, same batches, same masks: the runs differ only in how the work is laid out (packing) and in
precision, so their held-out losses should agree to within bf16 noise. Writes
``--results``/pretrain_loss_parity.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.pretrain.curves import METRICS, read_metrics

RESULTS = Path(__file__).parent / "results"
NAME = "pretrain_loss_parity"
COLUMNS = ("loss", "mlm_loss", "sop_loss", "mlm_accuracy", "sop_accuracy")


def heldout(run: Path) -> dict[int, dict]:
    return {r["step"]: r for r in read_metrics(run / METRICS) if r["split"] == "heldout"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reference", type=Path, help="run folder of the reference run (e.g. --no-pack --no-bf16)")
    parser.add_argument("candidate", type=Path, help="run folder of the run to compare (e.g. the defaults)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder for the .json and .md")
    args = parser.parse_args()
    runs = {name: json.loads((path / "kalbert.json").read_text(encoding="utf-8"))
            for name, path in (("reference", args.reference), ("candidate", args.candidate))}
    a, b = heldout(args.reference), heldout(args.candidate)
    steps = sorted(set(a) & set(b))
    rows = [{"step": s, **{f"{c}_{side}": curve[s][c] for c in COLUMNS for side, curve in (("ref", a), ("new", b))
                           if curve[s][c] is not None}} for s in steps]
    worst = {c: max((abs(a[s][c] - b[s][c]) for s in steps if a[s][c] is not None), default=None) for c in COLUMNS}
    report = {"command": shlex.join(["python", "benchmarks/pretrain_loss_parity.py", *sys.argv[1:]]),
              "runs": {name: {"folder": str(path), "command": runs[name]["command"], "config": runs[name]["config"]}
                       for name, path in (("reference", args.reference), ("candidate", args.candidate))},
              "heldout": rows, "max_abs_difference": worst}
    lines = ["# Held-out curves of two pretraining runs", "", f"```\n{report['command']}\n```", "",
             f"reference: `{runs['reference']['command']}`", "", f"candidate: `{runs['candidate']['command']}`", "",
             "| step | loss (ref / new) | MLM loss (ref / new) | MLM accuracy (ref / new) | SOP accuracy (ref / new) |",
             "|---|---|---|---|---|"]
    for s in steps:
        cells = [f"{a[s][c]:.4f} / {b[s][c]:.4f}" if a[s][c] is not None else "-"
                 for c in ("loss", "mlm_loss", "mlm_accuracy", "sop_accuracy")]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    lines += ["", "Largest difference over the evaluations: " + ", ".join(
        f"{c} {v:.4f}" for c, v in worst.items() if v is not None) + ".", ""]
    args.results.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.results / f"{NAME}.json", report)
    atomic_write_text(args.results / f"{NAME}.md", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
