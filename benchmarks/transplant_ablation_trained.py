"""Ablation of `kalbert transplant` after equal further-pretraining and STS training: the trained columns.

    .venv/bin/python benchmarks/transplant_ablation_trained.py --teacher teachers/me5-small --vocab vocab/ko-zh-48k \\
        --data outputs/data-ko-zh-split-s12345 --steps 600

transplant_ablation.py scores its variants (VARIANTS there) as built, at zero training tokens; a choice that
costs little there may cost more once trained, or the reverse. Here every variant gets the same budget. It is
built into --work/<variant>/init (the transplant; the scratch row is the same AlbertConfig as a seeded random
AlbertForPreTraining, since pretraining needs the heads), further-pretrained for --steps steps of 32 instances
(MLM+SOP with SOP on the mean state, AdamW 3e-4, 5% warmup; the scratch row with the same settings) and
scored on every held-out instance (the run's final MLM and SOP accuracy). The exported model is then
STS-trained on KorSTS train (CoSENT, mean pooling, --sts-epochs epochs, best epoch by KorSTS dev) and scored
on KorSTS dev and test. Finished stages are kept, so a killed script carries on where it stopped when rerun
with the same settings (a different setting on the same --work is refused). Writes
benchmarks/results/transplant_ablation_trained.{json,md,png}; a quick check:
`--variants E64 --steps 20 --sts-epochs 0.1 --work outputs/ablation-trained-quick`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from transformers import AlbertConfig, AlbertForPreTraining
from transplant_ablation import VARIANTS, Variant

from kalbert.artifact import read_meta
from kalbert.config import DEFAULT_SEED
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_json, atomic_write_text
from kalbert.pretrain.checkpoint import latest_checkpoint
from kalbert.pretrain.config import PretrainConfig, TransplantConfig
from kalbert.pretrain.curves import METRICS, read_metrics, save_panels
from kalbert.pretrain.data import PretrainingData
from kalbert.pretrain.presets import count_parameters, describe
from kalbert.pretrain.run_state import config_changes
from kalbert.pretrain.trainer import MODEL_SUBDIR, pretrain
from kalbert.sentence.config import SentenceTrainConfig
from kalbert.sentence.train import train_sentence_model
from kalbert.training import LoopConfig
from kalbert.transplant import transplant

RESULTS = Path(__file__).parent / "results"
NAME = "transplant_ablation_trained"
BATCH_SIZE, LR, WARMUP_RATIO, THREADS = 32, 3e-4, 0.05, 2
STS_LR, STS_BATCH_SIZE, STS_MAX_LENGTH = 2e-4, 32, 64
STS_REFS = {"korsts:dev": "KorSTS dev", "korsts:test": "KorSTS test"}
SECONDS = "seconds.json"


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _build(variant: Variant, args: argparse.Namespace, out: Path) -> None:
    """The variant's starting model in ``out``: the transplant, or (scratch) a seeded random AlbertForPreTraining
    with the transplant's config and tokenizer in place of its weights."""
    config = TransplantConfig(teacher=str(args.teacher), vocab=str(args.vocab), out=str(out), layers=variant.layers,
                              embedding_size=variant.embedding_size, share_groups=variant.share_groups,
                              seed=DEFAULT_SEED)
    transplant(config, overwrite=True)
    if variant.scratch:
        torch.manual_seed(DEFAULT_SEED)
        AlbertForPreTraining(AlbertConfig.from_pretrained(str(out))).save_pretrained(str(out))


def _pretrain_config(args: argparse.Namespace, init: Path, run: Path, heldout: int) -> PretrainConfig:
    return PretrainConfig(data=str(args.data), out=str(run), init_from=str(init), vocab=str(args.vocab),
                          objective="mlm+sop", sop_pooling="mean", optimizer="adamw", lr=LR,
                          warmup_ratio=WARMUP_RATIO, max_steps=args.steps, batch_size=BATCH_SIZE,
                          eval_every=args.steps, eval_instances=heldout, save_every=args.steps, threads=THREADS,
                          tensorboard=False, seed=DEFAULT_SEED, resume=True)


def _pretrain(variant: Variant, args: argparse.Namespace, config: PretrainConfig, folder: Path) -> None:
    """Build and further-pretrain, or continue from the run's last checkpoint; the wall seconds (build included,
    summed over the calls since the last fresh start) go to the folder's seconds.json, also when interrupted."""
    run = Path(config.out)
    seconds = _read_json(folder / SECONDS)
    checkpoint = latest_checkpoint(run)
    carried = seconds.get("pretrain", 0.0) if checkpoint else 0.0
    started = time.perf_counter()
    try:
        if checkpoint is None:
            _build(variant, args, Path(str(config.init_from)))
        pretrain(config)
    finally:
        seconds["pretrain"] = round(carried + time.perf_counter() - started, 1)
        atomic_write_json(folder / SECONDS, seconds)


def _check_pretrained(config: PretrainConfig) -> None:
    """Refuse a finished run made with other settings (bf16 is resolved when a run starts, so it is not compared)."""
    recorded = read_meta(config.out).get("config", {})
    changes = [c for c in config_changes(recorded, asdict(config)) if not c.startswith("bf16:")]
    if changes:
        raise SystemExit(f"{config.out} was trained with other settings ({'; '.join(changes)}): pass another --work")


def _sts_config(args: argparse.Namespace, model: Path, out: Path) -> SentenceTrainConfig:
    loop = LoopConfig(epochs=args.sts_epochs, batch_size=STS_BATCH_SIZE, lr=STS_LR, seed=DEFAULT_SEED)
    return SentenceTrainConfig(model=str(model), out=str(out), train=["korsts"], eval="korsts:dev",
                               test=["korsts:test"], pooling="mean", max_seq_length=STS_MAX_LENGTH, loop=loop)


def _sts_scores(folder: Path) -> dict[str, float]:
    """Spearman x100 by label, from a trained sentence model's kalbert.json ({} where it holds none)."""
    return {STS_REFS[m["data"]]: 100 * m["value"] for m in read_meta(folder).get("metrics", [])
            if m["stage"] == "sts" and m["metric"] == "spearman_cosine" and m["data"] in STS_REFS}


def _sts_done(config: SentenceTrainConfig) -> bool:
    """True when the output folder holds both scores of a training with exactly this config."""
    stages = [s for s in read_meta(config.out).get("stages", []) if s["stage"] == "sts"]
    same = bool(stages) and stages[-1]["config"] == json.loads(json.dumps(asdict(config)))
    return same and len(_sts_scores(Path(config.out))) == len(STS_REFS)


def _sts(config: SentenceTrainConfig, folder: Path) -> None:
    started = time.perf_counter()
    train_sentence_model(config, overwrite=True)
    seconds = _read_json(folder / SECONDS)
    seconds["sts"] = round(time.perf_counter() - started, 1)
    atomic_write_json(folder / SECONDS, seconds)


def _row(variant: Variant, folder: Path, run: Path, sts: Path, sts_error: str | None) -> dict:
    records = read_metrics(run / METRICS)
    held = [r for r in records if r["split"] == "heldout"]
    config = AlbertConfig.from_pretrained(str(run / MODEL_SUBDIR))
    history = None if sts_error else _read_json(sts / "training_log.json")["history"]
    return {
        "variant": variant.name, "kind": "scratch" if variant.scratch else "transplant",
        "embedding_size": variant.embedding_size, "layers": variant.layers,
        "share_groups": variant.share_groups or variant.layers,
        "model": describe(config), "parameters": count_parameters(config),
        "tokens_seen": [r for r in records if r["split"] == "train"][-1]["tokens_seen"],
        "heldout_instances": held[-1]["instances"],
        "mlm_accuracy": held[-1]["mlm_accuracy"], "sop_accuracy": held[-1]["sop_accuracy"],
        "heldout_at_step_0": {"mlm_accuracy": held[0]["mlm_accuracy"], "sop_accuracy": held[0]["sop_accuracy"]},
        "spearman": {} if sts_error else _sts_scores(sts), "sts_error": sts_error,
        "korsts_dev_before_sts_training": 100 * history[0]["score"] if history else None,
        "seconds": _read_json(folder / SECONDS), "run": str(run), "sentence_model": str(sts),
    }


def _run_variant(variant: Variant, args: argparse.Namespace, heldout: int) -> dict:
    folder = args.work / _slug(variant.name)
    run, sts = folder / "run", folder / "sts"
    config = _pretrain_config(args, folder / "init", run, heldout)
    pretrained_now = not (run / MODEL_SUBDIR / "config.json").exists()
    if pretrained_now:
        _pretrain(variant, args, config, folder)
    else:
        _check_pretrained(config)
    sts_config = _sts_config(args, run / MODEL_SUBDIR, sts)
    sts_error = None
    try:
        if pretrained_now or not _sts_done(sts_config):
            _sts(sts_config, folder)
    except KalbertError as exc:  # e.g. embeddings collapsed: recorded, and the other variants still run
        sts_error = str(exc)
    return _row(variant, folder, run, sts, sts_error)


def _plot(rows: list[dict], png: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.arange(len(rows))
    fig, (sts, heldout) = plt.subplots(1, 2, figsize=(13, 5))
    for offset, label in zip((-0.2, 0.2), STS_REFS.values(), strict=True):
        sts.bar(x + offset, [r["spearman"].get(label, 0.0) for r in rows], width=0.4, label=label)
    for offset, key, label in ((-0.2, "mlm_accuracy", "MLM"), (0.2, "sop_accuracy", "SOP")):
        heldout.bar(x + offset, [r[key] for r in rows], width=0.4, label=label)
    sts.set(ylabel="Spearman x100 after STS training", title="KorSTS after STS training")
    heldout.set(ylabel="accuracy", title="held-out accuracy after further-pretraining", ylim=(0, 1))
    for axis in (sts, heldout):
        axis.set_xticks(x, [r["variant"] for r in rows], rotation=25, ha="right", fontsize=7)
    save_panels(fig, (sts, heldout), title, png)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher", type=Path, default=Path("teachers/me5-small"),
                        help="SentenceTransformer folder of the teacher (`kalbert teacher export`)")
    parser.add_argument("--vocab", type=Path, default=Path("vocab/ko-zh-48k"), help="kalbert vocab folder")
    parser.add_argument("--data", type=Path, default=Path("outputs/data-ko-zh-split-s12345"),
                        help="`kalbert data build` folder made with --vocab")
    parser.add_argument("--work", type=Path, default=Path("outputs/ablation-trained"),
                        help="one subfolder per variant: starting model, pretraining run, STS model (kept)")
    parser.add_argument("--steps", type=int, default=600, help=f"pretraining steps of {BATCH_SIZE} instances")
    parser.add_argument("--sts-epochs", type=float, default=1.0, help="KorSTS training epochs (fractions allowed)")
    parser.add_argument("--variants", nargs="+", metavar="TEXT",
                        help="only these variants: an exact name, or text that the names contain (case-insensitive)")
    parser.add_argument("--note", default="", help="conditions to record (machine, other jobs)")
    return parser.parse_args()


def _cell(value: float | None) -> str:
    return "failed (see the JSON's sts_error)" if value is None else f"{value:.2f}"


def _selects(text: str, name: str) -> bool:
    """A --variants entry picks the variant of exactly that name if there is one, else every name containing it."""
    exact = {v.name.lower() for v in VARIANTS}
    return text.lower() == name.lower() if text.lower() in exact else text.lower() in name.lower()


def _markdown(report: dict, command: str) -> str:
    rows = report["rows"]
    table = ["| variant | parameters | MLM acc | SOP acc | KorSTS dev (STS-trained) | KorSTS test (STS-trained) | "
             "pretrain min | STS min |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        minutes = [f"{r['seconds'][k] / 60:.1f}" if k in r["seconds"] else "-" for k in ("pretrain", "sts")]
        table.append(f"| {r['variant']} | {r['parameters']:,} | {r['mlm_accuracy']:.4f} | {r['sop_accuracy']:.4f} | "
                     f"{_cell(r['spearman'].get('KorSTS dev'))} | {_cell(r['spearman'].get('KorSTS test'))} | "
                     f"{minutes[0]} | {minutes[1]} |")
    tokens = ", ".join(f"{t / 1e6:.2f}M" for t in sorted({r["tokens_seen"] for r in rows}))
    steps = report["steps"]
    return "\n".join([
        "# `kalbert transplant` ablation after further-pretraining and STS training", "",
        "Produced by:", "", "```", report["data_command"], command, "```", "",
        f"Budget, the same for every variant, the scratch row included: {steps} steps x {BATCH_SIZE} instances = "
        f"{steps * BATCH_SIZE:,} instances ({tokens} tokens seen) of MLM+SOP further-pretraining from the built "
        f"model (SOP on the mean state, AdamW lr {LR:g}, {WARMUP_RATIO:.0%} warmup, seed {DEFAULT_SEED}, "
        f"{THREADS} threads). The scratch row is the E128 L6 transplant's AlbertConfig randomly initialised "
        f"(torch seed {DEFAULT_SEED}) with the same tokenizer. MLM and SOP accuracy: the run's final evaluation on "
        f"all {report['heldout_instances']:,} held-out instances (fixed masks). KorSTS: Spearman x100 of the cosine "
        f"of mean-pooled embeddings after {report['sts_epochs']:g} epoch(s) of CoSENT training on KorSTS train "
        f"(lr {STS_LR:g}, batch {STS_BATCH_SIZE}, max length {STS_MAX_LENGTH}); the epoch kept is the best on "
        f"KorSTS dev, so dev picked the model and test did not. Parameters count the encoder without "
        f"pretraining heads; the minutes are wall time on this machine (pretrain includes building the model).", "",
        *table, "", f"![bars]({NAME}.png)", "",
        f"Conditions: {report['note']} (load average at the end: {report['load_average'][0]:.2f})", "",
    ])


def main() -> None:
    args = _parse_args()
    torch.set_num_threads(THREADS)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()  # the load report lists the unused MLM/SOP heads when STS training starts
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    command = f"python benchmarks/{NAME}.py " + shlex.join(sys.argv[1:])
    variants = [v for v in VARIANTS if not args.variants or any(_selects(t, v.name) for t in args.variants)]
    if not variants:
        raise SystemExit(f"no variant name contains any of {args.variants}: {[v.name for v in VARIANTS]}")
    data = PretrainingData.open(args.data)
    heldout = int(data.meta["splits"]["heldout"]["instances"])
    if not heldout:
        raise SystemExit(f"{args.data} has no held-out instances to score MLM and SOP on")
    rows = []
    for variant in variants:
        rows.append(_run_variant(variant, args, heldout))
        r = rows[-1]
        print(f"{variant.name}: MLM {r['mlm_accuracy']:.4f}, SOP {r['sop_accuracy']:.4f}, {r['spearman']}",
              flush=True)
    report = {
        "command": command, "data_command": data.meta.get("command") or f"(data folder {args.data})",
        "teacher": str(args.teacher), "vocab": str(args.vocab), "data": str(args.data), "work": str(args.work),
        "steps": args.steps, "batch_size": BATCH_SIZE, "lr": LR, "warmup_ratio": WARMUP_RATIO,
        "heldout_instances": heldout, "sts_epochs": args.sts_epochs, "sts_lr": STS_LR,
        "sts_batch_size": STS_BATCH_SIZE, "sts_max_seq_length": STS_MAX_LENGTH, "threads": THREADS,
        "seed": DEFAULT_SEED, "rows": rows, "load_average": os.getloadavg(), "note": args.note,
    }
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / f"{NAME}.json", report)
    _plot(rows, RESULTS / f"{NAME}.png", f"transplant ablation after {args.steps} steps x {BATCH_SIZE} of "
                                          f"further-pretraining and KorSTS training")
    atomic_write_text(RESULTS / f"{NAME}.md", _markdown(report, command))
    print(f"wrote {RESULTS / NAME}.{{json,md,png}}")


if __name__ == "__main__":
    main()
