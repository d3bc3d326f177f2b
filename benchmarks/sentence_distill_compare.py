"""Does distillation help, and which loss? STS Spearman of sentence models made by different routes.

Reads each model folder's kalbert.json (every stage's command, time and measured metrics), scores
each model on every ``--splits`` split it has no recorded result for, and writes one table. Routes
(same student checkpoint, same STS settings):

    sts-only:      kalbert sbert sts --model CKPT --train korsts --eval korsts:dev --test korsts:test ...
    distill:       kalbert sbert distill --student CKPT --parallel parallel-stsb-train tatoeba-en-ko news-en-ko ...
    distill + sts: kalbert sbert sts --model DISTILLED --train korsts --eval korsts:dev --test korsts:test ...

    python benchmarks/sentence_distill_compare.py sts-only=outputs/a distill=outputs/b distill+sts=outputs/c

Writes benchmarks/results/sentence_distill_vs_sts.{json,md} (or --out PREFIX). Comparisons that pick a
setting (a loss, say) use dev splits only: ``--splits korsts:dev stsb-zh:dev``.
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

from kalbert.artifact import read_meta
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.sentence import evaluate_sts, load_sentence_model

DEFAULT_SPLITS = ["korsts:dev", "korsts:test"]


def describe(label: str, folder: Path, splits: list[str]) -> dict:
    meta = read_meta(folder)
    recorded = {m["data"]: m["value"] for m in meta.get("metrics", []) if m["metric"].endswith("spearman_cosine")}
    model = None
    scores = {}
    for split in splits:
        if split not in recorded:
            model = model or load_sentence_model(folder)
            recorded[split] = evaluate_sts(model, split)
        scores[split] = recorded[split]
    stages = [{"stage": s["stage"], "command": s.get("command"), "seconds": s.get("seconds"),
               "steps": s.get("steps"), "best_step": s.get("best_step")} for s in meta.get("stages", [])]
    log = folder / "training_log.json"
    curve = [(e["step"], e["score"]) for e in json.loads(log.read_text())["history"]] if log.is_file() else []
    return {"route": label, "folder": str(folder), "scores": scores, "stages": stages, "source": meta.get("source"),
            "last_stage_curve": curve}


def markdown(rows: list[dict], splits: list[str], command: str, title: str, note: str) -> str:
    lines = [f"# {title}", "", f"`{command}`", "", *([note, ""] if note else []),
             "Spearman (cosine) x 100. No model was trained on these splits; dev splits pick checkpoints, "
             "test splits are never used for a choice.", "",
             f"| route | {' | '.join(splits)} | stages (seconds) | last stage's selection score by step |",
             f"|---|{'---|' * len(splits)}---|---|"]
    for row in rows:
        scores = " | ".join(f"{100 * row['scores'][split]:.2f}" for split in splits)
        stages = ", ".join(f"{s['stage']} ({s['seconds']})" for s in row["stages"])
        curve = " ".join(f"{step}: {100 * score:.1f}" for step, score in row["last_stage_curve"]) or "-"
        lines.append(f"| {row['route']} | {scores} | {stages} | {curve} |")
    lines += ["", "Commands:", ""]
    for row in rows:
        lines += [f"- {row['route']}:"] + [f"  - `{s['command']}`" for s in row["stages"] if s["command"]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("routes", nargs="+", metavar="LABEL=FOLDER")
    parser.add_argument("--out", default="benchmarks/results/sentence_distill_vs_sts")
    parser.add_argument("--title", default="KorSTS: STS training alone vs distillation first")
    parser.add_argument("--note", default="", help="a line under the title (say, how the student was made)")
    parser.add_argument("--splits", nargs="+", default=DEFAULT_SPLITS, help="STS splits in the table")
    args = parser.parse_args()
    rows = [describe(label, Path(folder), args.splits) for label, _, folder in (r.partition("=") for r in args.routes)]
    command = "python benchmarks/sentence_distill_compare.py " + " ".join(args.routes)
    if args.splits != DEFAULT_SPLITS:
        command += " --splits " + " ".join(args.splits)
    if args.out != parser.get_default("out"):
        command += f" --out {args.out}"
    if args.title != parser.get_default("title"):
        command += f" --title {shlex.quote(args.title)}"
    if args.note:
        command += f" --note {shlex.quote(args.note)}"
    atomic_write_json(f"{args.out}.json", {"command": command, "splits": args.splits, "note": args.note,
                                            "routes": rows})
    text = markdown(rows, args.splits, command, args.title, args.note)
    atomic_write_text(f"{args.out}.md", text)
    print(text)


if __name__ == "__main__":
    main()
