"""Further-pretraining a transplanted ALBERT vs pretraining the same architecture from scratch, at equal budget.

    .venv/bin/python benchmarks/pretrain_transplant_vs_scratch.py \\
        --run "transplant, SOP on the mean state=outputs/pt-transplant-L6E128-mean" \\
        --reuse benchmarks/results/pretrain_transplant_vs_scratch.json

Each ``--run NAME=FOLDER`` is a run folder of `kalbert pretrain`; all runs use the same data folder. The
curves are the runs' own held-out evaluations (metrics.jsonl); a run that further-pretrains another run's
export starts where that one ended (its steps and tokens). On top of them each final model is scored
once more on the held-out instances split by language (Korean vs Chinese, by the script of their pieces),
with the trainer's fixed evaluation masks. ``--reuse`` carries the runs of an earlier result of this script
that are not rerun now (their curves, final scores and commands, marked as reused), so that a long run can be
set beside a from-scratch curve measured before on the same data; it must have the same held-out instances.
Writes benchmarks/results/pretrain_transplant_vs_scratch.{json,md,png}.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pretrain_runs import language_groups, majority_share, named_run, read_json, score_heldout

from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.pretrain.curves import heldout_with_tokens, plot_heldout_by_tokens
from kalbert.pretrain.data import PretrainingData
from kalbert.pretrain.presets import describe

RESULTS = Path(__file__).parent / "results"
NAME = "pretrain_transplant_vs_scratch"


def _continued_from(meta: dict) -> tuple[int, int]:
    """Steps and tokens already behind a run that further-pretrains an earlier run's export (0, 0 otherwise), so
    that a second stage continues the first one's curve."""
    init = meta["config"].get("init_from")
    earlier = Path(init) / "kalbert.json" if init else None
    if earlier is None or not earlier.is_file():
        return 0, 0
    found = read_json(earlier)
    return int(found.get("steps", 0)), int(found.get("tokens_seen", 0))


def _reused(path: Path, fresh: set[str], heldout_instances: int) -> dict[str, dict]:
    """The runs of an earlier result that are not rerun now: curve, final scores, model line, command."""
    earlier = read_json(path)
    if earlier["heldout_instances"] != heldout_instances:
        raise SystemExit(f"{path} was scored on {earlier['heldout_instances']} held-out instances, these runs on "
                         f"{heldout_instances}: not the same held-out split")
    commands = earlier.get("run_commands") or dict(zip(earlier["heldout"], earlier["commands"][1:], strict=False))
    return {name: {"curve": curve, "final": earlier["final_by_language"][name], "model": earlier["models"][name],
                   "command": commands.get(name, ""), "reused_from": str(path)}
            for name, curve in earlier["heldout"].items() if name not in fresh}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=named_run, action="append", required=True, metavar="NAME=FOLDER",
                        help="a kalbert pretrain run folder and the name it gets in the table (repeatable)")
    parser.add_argument("--reuse", type=Path, help="an earlier results JSON of this script whose other runs to keep")
    parser.add_argument("--note", default="", help="conditions to record (machine, other jobs)")
    args = parser.parse_args()
    runs = dict(args.run)
    metas = {name: read_json(run / "kalbert.json") for name, run in runs.items()}
    data_dirs = {m["config"]["data"] for m in metas.values()}
    if len(data_dirs) != 1:
        raise SystemExit(f"the runs used different data folders: {sorted(data_dirs)}")
    data = PretrainingData.open(data_dirs.pop())
    from transformers import AlbertConfig

    entries = {}
    for name, run in runs.items():
        steps, tokens = _continued_from(metas[name])
        curve = [{**r, "step": r["step"] + steps, "tokens_seen": r["tokens_seen"] + tokens}
                 for r in heldout_with_tokens(run)]
        entries[name] = {"curve": curve, "model": describe(AlbertConfig.from_pretrained(str(run / "model"))),
                         "command": metas[name]["command"], "reused_from": None}
    n = min(entry["curve"][-1]["instances"] for entry in entries.values())
    groups = language_groups(data, n)
    for name, run in runs.items():
        config = metas[name]["config"]
        entries[name]["final"] = {lang: score_heldout(run / "model", config, data, idx, config["seed"])
                                  for lang, idx in groups.items()}
    if args.reuse:
        entries.update(_reused(args.reuse, set(runs), n))
    majority = majority_share([data.split("heldout")[i].label for i in range(n)])
    curves = {name: entry["curve"] for name, entry in entries.items()}
    final = {name: entry["final"] for name, entry in entries.items()}
    data_command = read_json(data.folder / "kalbert.json")["command"]
    report = {"commands": [data_command, *(entry["command"] for entry in entries.values())],
              "run_commands": {name: entry["command"] for name, entry in entries.items()},
              "reused_from": {name: entry["reused_from"] for name, entry in entries.items() if entry["reused_from"]},
              "models": {name: entry["model"] for name, entry in entries.items()},
              "heldout_instances": n, "sop_majority_class_accuracy": majority, "heldout": curves,
              "final_by_language": final, "load_average": os.getloadavg(), "note": args.note}
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / f"{NAME}.json", report)
    plot_heldout_by_tokens(curves, RESULTS / f"{NAME}.png",
                           "same model and data: transplant vs scratch, by training tokens", sop_majority=majority)
    names = list(entries)
    by_step = {name: {r["step"]: r for r in held} for name, held in curves.items()}
    steps = sorted({r["step"] for held in curves.values() for r in held})
    rows = ["| step | " + " | ".join(f"{k}: tokens, MLM acc, SOP acc" for k in names) + " |",
            "|---:|" + "---|" * len(names)]
    for step in steps:
        cells = []
        for name in names:
            r = by_step[name].get(step)
            cells.append(f"{r['tokens_seen'] / 1e6:.2f}M, {r['mlm_accuracy']:.4f}, {r['sop_accuracy']:.4f}"
                         if r else "-")
        rows.append(f"| {step} | " + " | ".join(cells) + " |")
    lang_rows = ["| model | language | held-out instances | MLM accuracy | SOP accuracy | SOP majority label |",
                 "|---|---|---:|---:|---:|---:|"]
    for name in names:
        for lang, scores in final[name].items():
            lang_rows.append(f"| {name} | {lang} | {scores['instances']} | {scores['mlm_accuracy']:.4f} | "
                             f"{scores['sop_accuracy']:.4f} | {scores['sop_majority_class_accuracy']:.4f} |")
    run_args = " ".join(f'--run "{name}={folder}"' for name, folder in runs.items())
    reuse_arg = f" --reuse {args.reuse}" if args.reuse else ""
    reused_lines = [f"- reused from `{entry['reused_from']}` (an earlier run of this script on the same data and "
                    f"held-out split): {name}" for name, entry in entries.items() if entry["reused_from"]]
    text = "\n".join([
        "# Transplant + further-pretraining vs from scratch (same model and data, by training tokens)", "",
        "Produced by:", "", "```", data_command, *(entry["command"] for entry in entries.values()),
        f"python benchmarks/{NAME}.py {run_args}{reuse_arg}", "```", "",
        *(f"- {name}: {entry['model']}" for name, entry in entries.items()), *reused_lines, "",
        f"Held-out split: {n} instances of documents never trained on (fixed masks at every evaluation); "
        f"always answering the majority SOP label scores {majority:.4f}.", "",
        *rows, "", f"![curves]({NAME}.png)", "",
        "## Final models by language (held-out instances, same masks)", "", *lang_rows, "",
        f"Conditions: {args.note} (load average when scoring: {report['load_average'][0]:.2f})", "",
    ])
    atomic_write_text(RESULTS / f"{NAME}.md", text)
    print(f"wrote {RESULTS / NAME}.{{json,md,png}}")


if __name__ == "__main__":
    main()
