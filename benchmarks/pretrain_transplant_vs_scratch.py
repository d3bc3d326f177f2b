"""Further-pretraining a transplanted ALBERT vs pretraining the same architecture from scratch, at equal budget.

    .venv/bin/python benchmarks/pretrain_transplant_vs_scratch.py \\
        --transplant outputs/pt-transplant-L6E128 --scratch outputs/pt-scratch-L6E128

Both arguments are run folders of `kalbert pretrain` on the same data folder with the same steps and batch.
The curves are the runs' own held-out evaluations (metrics.jsonl); on top of them the final models are
scored once more on the held-out instances split by language (Korean vs Chinese, by the script of their
pieces), with the trainer's fixed evaluation masks. Writes benchmarks/results/pretrain_transplant_vs_scratch.
{json,md,png}.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
import torch

from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.pretrain.curves import METRICS, read_metrics, save_panels
from kalbert.pretrain.data import PretrainingData
from kalbert.pretrain.masking import MaskingConfig, collate
from kalbert.pretrain.objective import PretrainingObjective
from kalbert.pretrain.presets import describe

RESULTS = Path(__file__).parent / "results"
NAME = "pretrain_transplant_vs_scratch"
EVAL_STREAM = 1  # the trainer's evaluation mask stream: key (seed, 1, 0)


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _language_of_pieces(data: PretrainingData) -> np.ndarray:
    """Per vocabulary id: 1 for a piece with Hangul, 2 for one with Han characters, 0 otherwise."""
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=str(data.vocab_dir / "spiece.model"))
    kinds = np.zeros(processor.get_piece_size(), dtype=np.int8)
    for i in range(processor.get_piece_size()):
        piece = processor.id_to_piece(i)
        if any("\uac00" <= c <= "\ud7a3" or "\u3131" <= c <= "\u318e" for c in piece):
            kinds[i] = 1
        elif any("\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf" for c in piece):
            kinds[i] = 2
    return kinds


def _split_by_language(data: PretrainingData, n: int) -> dict[str, list[int]]:
    kinds = _language_of_pieces(data)
    heldout = data.split("heldout")
    groups: dict[str, list[int]] = {"ko": [], "zh": []}
    for i in range(n):
        counts = np.bincount(kinds[np.asarray(heldout[i].ids)], minlength=3)
        groups["ko" if counts[1] >= counts[2] else "zh"].append(i)
    return groups


@torch.no_grad()
def _score(run: Path, data: PretrainingData, indices: list[int], batch_size: int = 32) -> dict:
    """MLM and SOP accuracy of the run's exported model on the given held-out instances (trainer's masks)."""
    from transformers import AlbertForPreTraining

    config = _json(run / "kalbert.json")["config"]
    model = AlbertForPreTraining.from_pretrained(str(run / "model"))
    objective = PretrainingObjective(model, config["objective"]).eval()
    masking = MaskingConfig(**config["masking"])
    heldout = data.split("heldout")
    sums = np.zeros(4)
    for first in range(0, len(indices), batch_size):
        part = indices[first : first + batch_size]
        batch = collate([heldout[i] for i in part], part, (config["seed"], EVAL_STREAM, 0), masking, data.vocab_size)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(config["bf16"])):
            out = objective(**batch)
        sums += [float(out["mlm_correct"]), float(out["masked"]), float(out.get("sop_correct", 0)), len(part)]
    return {"instances": len(indices), "mlm_accuracy": sums[0] / max(sums[1], 1),
            "sop_accuracy": sums[2] / max(sums[3], 1) if objective.sop else None,
            "sop_majority_class_accuracy": _majority([heldout[i].label for i in indices])}


def _majority(labels: list[int]) -> float:
    share = sum(labels) / max(len(labels), 1)
    return max(share, 1 - share)


def _plot(curves: dict[str, list[dict]], majority: float, png: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (mlm, sop) = plt.subplots(1, 2, figsize=(11, 4))
    for name, held in curves.items():
        tokens = [r["tokens_seen"] / 1e6 for r in held]
        mlm.plot(tokens, [r["mlm_accuracy"] for r in held], "o-", ms=3, label=name)
        sop.plot(tokens, [r["sop_accuracy"] for r in held], "o-", ms=3, label=name)
    sop.axhline(majority, color="grey", ls="--", lw=1, label="majority label")
    mlm.set(xlabel="training tokens (M)", ylabel="accuracy", title="held-out MLM accuracy", ylim=(0, 1))
    sop.set(xlabel="training tokens (M)", ylabel="accuracy", title="held-out SOP accuracy", ylim=(0, 1))
    save_panels(fig, (mlm, sop), title, png)


def _heldout_with_tokens(run: Path) -> list[dict]:
    """Held-out records, each with the training tokens seen at its step (from the train log)."""
    records = read_metrics(run / METRICS)
    seen = {r["step"]: r["tokens_seen"] for r in records if r["split"] == "train"}
    per_step = max(seen.values()) / max(seen) if seen else 0.0
    return [{**r, "tokens_seen": seen.get(r["step"], round(r["step"] * per_step))}
            for r in records if r["split"] == "heldout"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transplant", type=Path, required=True, help="run folder started with --init-from")
    parser.add_argument("--scratch", type=Path, required=True, help="run folder of the same model from scratch")
    parser.add_argument("--note", default="", help="conditions to record (machine, other jobs)")
    args = parser.parse_args()
    runs = {"transplant + further-pretraining": args.transplant, "from scratch": args.scratch}
    metas = {name: _json(run / "kalbert.json") for name, run in runs.items()}
    data_dirs = {m["config"]["data"] for m in metas.values()}
    if len(data_dirs) != 1:
        raise SystemExit(f"the runs used different data folders: {sorted(data_dirs)}")
    data = PretrainingData.open(data_dirs.pop())
    curves = {name: _heldout_with_tokens(run) for name, run in runs.items()}
    n = curves["from scratch"][-1]["instances"]
    groups = _split_by_language(data, n)
    final = {name: {lang: _score(run, data, idx) for lang, idx in groups.items()} for name, run in runs.items()}
    majority = _majority([data.split("heldout")[i].label for i in range(n)])
    commands = [_json(data.folder / "kalbert.json")["command"], *(m["command"] for m in metas.values())]
    from transformers import AlbertConfig

    models = {name: describe(AlbertConfig.from_pretrained(str(run / "model"))) for name, run in runs.items()}
    report = {"commands": commands, "models": models,
              "heldout_instances": n, "sop_majority_class_accuracy": majority, "heldout": curves,
              "final_by_language": final, "load_average": os.getloadavg(), "note": args.note}
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / f"{NAME}.json", report)
    _plot(curves, majority, RESULTS / f"{NAME}.png", "same model, data and steps: transplant vs scratch")
    steps = sorted({r["step"] for held in curves.values() for r in held})
    by_step = {name: {r["step"]: r for r in held} for name, held in curves.items()}
    names = list(runs)
    rows = ["| step | training tokens | " + " | ".join(f"{k} MLM acc | {k} SOP acc" for k in names) + " |",
            "|---|---:|" + "---:|---:|" * len(names)]
    for step in steps:
        cells = []
        for name in names:
            r = by_step[name].get(step)
            cells += [f"{r['mlm_accuracy']:.4f}", f"{r['sop_accuracy']:.4f}"] if r else ["-", "-"]
        tokens = next(by_step[k][step]["tokens_seen"] for k in names if step in by_step[k])
        rows.append(f"| {step} | {tokens:,} | " + " | ".join(cells) + " |")
    lang_rows = ["| model | language | held-out instances | MLM accuracy | SOP accuracy | SOP majority label |",
                 "|---|---|---:|---:|---:|---:|"]
    for name in names:
        for lang, scores in final[name].items():
            lang_rows.append(f"| {name} | {lang} | {scores['instances']} | {scores['mlm_accuracy']:.4f} | "
                             f"{scores['sop_accuracy']:.4f} | {scores['sop_majority_class_accuracy']:.4f} |")
    text = "\n".join([
        "# Transplant + further-pretraining vs from scratch (same model, data, steps)", "",
        "Produced by:", "", "```", *commands,
        f"python benchmarks/{NAME}.py --transplant {args.transplant} --scratch {args.scratch}", "```", "",
        *(f"- {name}: {model}" for name, model in report["models"].items()), "",
        f"Held-out split: {n} instances of documents never trained on (fixed masks at every evaluation); "
        f"always answering the majority SOP label scores {majority:.4f}.", "",
        *rows, "", "![curves](pretrain_transplant_vs_scratch.png)", "",
        "## Final models by language (held-out instances, same masks)", "", *lang_rows, "",
        f"Conditions: {args.note} (load average when scoring: {report['load_average'][0]:.2f})", "",
    ])
    atomic_write_text(RESULTS / f"{NAME}.md", text)
    print(f"wrote {RESULTS / NAME}.{{json,md,png}}")


if __name__ == "__main__":
    main()
