"""Held-out MLM accuracy of pretrained models under three masking schemes: how much of the number is the scheme.

    .venv/bin/python benchmarks/pretrain_masking.py \\
        --run "1-hour transplant=outputs/pt-transplant-L6E128-mean" \\
        --run "2-hour transplant=outputs/pt-transplant-stage2-distill"

`kalbert pretrain` masks as ALBERT does, with spans of 1-3 whole morphemes, so a masked piece rarely has the
rest of its word in view; BERT masks single pieces. The MLM accuracy a run reports is under its own masking, and
numbers quoted elsewhere are mostly under BERT's. This script scores each run's final model on the same held-out
instances under

- the run's own masking (what its metrics and the kit's targets use),
- single whole morphemes (its masking with spans of one unit),
- single pieces (BERT's scheme: unit `token`, spans of one),

for all held-out instances and for Korean and Chinese ones apart. Every model gets the same masks per scheme.
Writes benchmarks/results/pretrain_masking.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, replace
from pathlib import Path

from pretrain_runs import language_groups, named_run, read_json, score_heldout

from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.pretrain.data import PretrainingData
from kalbert.pretrain.masking import MaskingConfig

RESULTS = Path(__file__).parent / "results"
NAME = "pretrain_masking"


def _schemes(trained: MaskingConfig) -> dict[str, MaskingConfig]:
    return {f"as trained ({trained.mask_unit} spans of 1-{trained.max_ngram})": trained,
            f"single {trained.mask_unit}s": replace(trained, max_ngram=1),
            "single pieces (BERT)": replace(trained, mask_unit="token", max_ngram=1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=named_run, action="append", required=True, metavar="NAME=FOLDER",
                        help="a kalbert pretrain run folder and the name it gets in the table (repeatable)")
    parser.add_argument("--note", default="", help="conditions to record (machine, other jobs)")
    args = parser.parse_args()
    runs = dict(args.run)
    metas = {name: read_json(run / "kalbert.json") for name, run in runs.items()}
    configs = {name: meta["config"] for name, meta in metas.items()}
    shared = {(c["data"], c["seed"], json.dumps(c["masking"], sort_keys=True)) for c in configs.values()}
    if len(shared) != 1:
        raise SystemExit("the runs differ in data, seed or masking: score runs trained alike")
    data_dir, seed, _ = shared.pop()
    data = PretrainingData.open(data_dir)
    n = len(data.split("heldout"))
    groups = {"all": list(range(n)), **language_groups(data, n)}
    schemes = _schemes(MaskingConfig(**next(iter(configs.values()))["masking"]))
    accuracy = {name: {scheme: {group: score_heldout(run / "model", configs[name], data, indices, seed,
                                                     masking)["mlm_accuracy"]
                                for group, indices in groups.items()}
                       for scheme, masking in schemes.items()}
                for name, run in runs.items()}
    report = {"commands": [meta["command"] for meta in metas.values()], "data": data_dir,
              "heldout_instances": {group: len(indices) for group, indices in groups.items()},
              "schemes": {scheme: asdict(masking) for scheme, masking in schemes.items()},
              "mlm_accuracy": accuracy, "load_average": os.getloadavg(), "note": args.note}
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / f"{NAME}.json", report)
    table = ["| model | masking | MLM acc, all | Korean | Chinese |", "|---|---|---:|---:|---:|"]
    for name, by_scheme in accuracy.items():
        for scheme, acc in by_scheme.items():
            table.append(f"| {name} | {scheme} | {acc['all']:.4f} | {acc['ko']:.4f} | {acc['zh']:.4f} |")
    run_args = " ".join(f'--run "{name}={folder}"' for name, folder in runs.items())
    sizes = report["heldout_instances"]
    text = "\n".join([
        "# Held-out MLM accuracy by masking scheme", "",
        "Produced by:", "", "```", *report["commands"], f"python benchmarks/{NAME}.py {run_args}", "```", "",
        f"Held-out instances of `{data_dir}`: {sizes['all']} ({sizes['ko']} Korean, {sizes['zh']} Chinese), 15% of "
        "the pieces masked (80% [MASK], 10% random, 10% kept), the same masks for every model per scheme. Only the "
        "first row per model is what its run reports and what targets are read against; the others say how much "
        "of the number is the masking.", "",
        *table, "",
        f"Conditions: {args.note} (load average when scoring: {report['load_average'][0]:.2f})", "",
    ])
    atomic_write_text(RESULTS / f"{NAME}.md", text)
    print(f"wrote {RESULTS / NAME}.{{json,md}}")


if __name__ == "__main__":
    main()
