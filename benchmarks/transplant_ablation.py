"""Ablation of `kalbert transplant` at zero further-pretraining tokens: what each choice costs before training.

    .venv/bin/python benchmarks/transplant_ablation.py --teacher teachers/me5-small --vocab vocab/ko-zh-48k

Rows (the module-level VARIANTS): the E128 L6 shape randomly initialised (from scratch), and transplants
of the teacher with embedding size E = 64 / 128 / 256, 6 vs 4 layers, and 6 layers averaged into 3 or 1
shared layer groups; plus the teacher itself as a reference. Each model is built into a temporary folder
(deleted afterwards) and scored zero-shot: Spearman x100 between the cosine of attention-masked mean-pooled
last hidden states (the way e5 pools) and the gold scores of KorSTS dev and stsb-zh dev (dev splits only).
No training happens here, so MLM/SOP accuracy and STS after training are not measured. Writes
benchmarks/results/transplant_ablation.{json,md,png}; `--max-pairs 50` is a quick check.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from sts_dev import SETS, load_pairs, score

from kalbert.config import DEFAULT_SEED
from kalbert.hardware import hardware_block
from kalbert.io import atomic_write_bytes, atomic_write_json, atomic_write_text
from kalbert.pretrain.presets import describe
from kalbert.sentence.encoder import encode, load_sentence_model
from kalbert.transplant import TransplantConfig, transplant

RESULTS = Path(__file__).parent / "results"
NAME = "transplant_ablation"
MAX_LENGTH, BATCH_SIZE, THREADS = 128, 64, 2


@dataclass(frozen=True)
class Variant:
    name: str
    embedding_size: int = 128
    layers: int = 6
    share_groups: int | None = None
    scratch: bool = False
    """Random initialisation (seeded) of the same AlbertConfig, with the same tokenizer."""


VARIANTS = [
    Variant("scratch E128 L6", scratch=True),
    Variant("transplant E64 L6", embedding_size=64),
    Variant("transplant E128 L6"),
    Variant("transplant E256 L6", embedding_size=256),
    Variant("transplant E128 L4", layers=4),
    Variant("transplant E128 L6, 3 shared groups (pairs averaged)", share_groups=3),
    Variant("transplant E128 L6, 1 shared group (all 6 averaged)", share_groups=1),
]


def _run_variant(variant: Variant, args: argparse.Namespace, pairs: dict[str, list], work: Path) -> dict:
    started = time.perf_counter()
    out = work / "model"
    config = TransplantConfig(teacher=str(args.teacher), vocab=str(args.vocab), out=str(out), layers=variant.layers,
                              embedding_size=variant.embedding_size, share_groups=variant.share_groups,
                              seed=DEFAULT_SEED)
    built = transplant(config, overwrite=True)
    if variant.scratch:  # the same folder (config, tokenizer) with random weights in place of the transplant's
        from transformers import AlbertConfig, AlbertModel

        torch.manual_seed(DEFAULT_SEED)
        AlbertModel(AlbertConfig.from_pretrained(str(out))).save_pretrained(str(out))
    model = load_sentence_model(out, pooling="mean")
    build_s = time.perf_counter() - started
    scores = score(lambda sentences: encode(model, sentences, batch_size=BATCH_SIZE), pairs)
    encoder = model[0].auto_model
    row = {
        "variant": variant.name, "kind": "scratch" if variant.scratch else "transplant",
        "embedding_size": variant.embedding_size, "layers": variant.layers,
        "share_groups": variant.share_groups or variant.layers,
        "model": describe(encoder.config), "parameters": sum(p.numel() for p in encoder.parameters()),
        "teacher_layers": None if variant.scratch else built.teacher_layers,
        "variance_kept": None if variant.scratch else built.variance_kept,
        "vocab_mapping": None if variant.scratch else built.mapping, "spearman": scores,
        "seconds": {"build": round(build_s, 1), "score": round(time.perf_counter() - started - build_s, 1)},
    }
    return row


def _teacher_rows(args: argparse.Namespace, pairs: dict[str, list]) -> list[dict]:
    """The teacher as SentenceTransformer runs it (default prompt, its own mean pooling) and without the prompt."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(args.teacher), device="cpu", local_files_only=True)
    model.max_seq_length = MAX_LENGTH
    parameters = sum(p.numel() for p in model.parameters())
    rows = []
    for label, prompt in (("teacher (default prompt)", model.default_prompt_name), ("teacher, no prompt", None)):
        started = time.perf_counter()
        kwargs = {"prompt_name": prompt} if prompt else {"prompt": ""}

        def embed(sentences: list[str], kwargs=kwargs) -> np.ndarray:
            return model.encode(sentences, batch_size=BATCH_SIZE, convert_to_numpy=True, show_progress_bar=False,
                                **kwargs)

        text = model.prompts.get(prompt, "") if prompt else ""
        rows.append({
            "variant": label, "kind": "teacher", "prompt": text,
            "model": f"{args.teacher}: {parameters / 1e6:.1f}M parameters", "parameters": parameters,
            "spearman": score(embed, pairs), "seconds": {"score": round(time.perf_counter() - started, 1)},
        })
    return rows


def _cell(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _plot(rows: list[dict], png: Path, title: str) -> None:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [r["variant"] for r in rows]
    x = np.arange(len(rows))
    fig, axis = plt.subplots(figsize=(11, 4.5))
    for offset, (_, _, data) in zip((-0.2, 0.2), SETS, strict=True):
        values = [r["spearman"][data] if r["spearman"][data] is not None else 0.0 for r in rows]
        axis.bar(x + offset, values, width=0.4, label=data)
    axis.set_xticks(x, labels, rotation=25, ha="right", fontsize=8)
    axis.set(ylabel="Spearman x100 (cosine of mean-pooled states)", title=title)
    axis.axhline(0, color="grey", lw=0.8)
    axis.grid(axis="y", alpha=0.3)
    axis.legend()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(png, buffer.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher", type=Path, default=Path("teachers/me5-small"),
                        help="SentenceTransformer folder of the teacher (`kalbert teacher export`)")
    parser.add_argument("--vocab", type=Path, default=Path("vocab/ko-zh-48k"), help="kalbert vocab folder")
    parser.add_argument("--max-pairs", type=int, default=0, help="first N pairs of each dev set (0: all)")
    parser.add_argument("--note", default="", help="conditions to record (machine, other jobs)")
    args = parser.parse_args()
    torch.set_num_threads(THREADS)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()  # the load report lists the unused MLM/SOP heads for every variant
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    command = "python benchmarks/transplant_ablation.py " + shlex.join(sys.argv[1:])
    started = time.perf_counter()
    pairs = load_pairs(args.max_pairs)
    rows = []
    for variant in VARIANTS:
        work = Path(tempfile.mkdtemp(prefix="kalbert-ablation-"))
        try:
            rows.append(_run_variant(variant, args, pairs, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"{variant.name}: {rows[-1]['spearman']}", flush=True)
    rows += _teacher_rows(args, pairs)
    print(f"{rows[-2]['variant']}: {rows[-2]['spearman']}\n{rows[-1]['variant']}: {rows[-1]['spearman']}")
    report = {
        "command": command, "teacher": str(args.teacher), "vocab": str(args.vocab),
        "pairs": {label: len(p) for label, p in pairs.items()}, "max_pairs": args.max_pairs,
        "pooling": "attention-masked mean of the last hidden states", "max_length": MAX_LENGTH,
        "batch_size": BATCH_SIZE, "threads": THREADS, "seed": DEFAULT_SEED, "rows": rows,
        "seconds": round(time.perf_counter() - started, 1), "load_average": os.getloadavg(), "note": args.note,
        "hardware": hardware_block(),
    }
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / f"{NAME}.json", report)
    _plot(rows, RESULTS / f"{NAME}.png", "zero-shot STS dev at zero training tokens")
    labels = [label for _, _, label in SETS]
    table = ["| variant | model | parameters | variance kept (all / words) | "
             + " | ".join(f"{label} Spearman x100" for label in labels) + " |",
             "|---|---|---:|---:|" + "---:|" * len(labels)]
    for r in rows:
        kept = r.get("variance_kept")
        kept_cell = f"{kept['all']:.1%} / {kept['words']:.1%}" if kept else "-"
        table.append(f"| {r['variant']} | {r['model']} | {r['parameters']:,} | {kept_cell} | "
                     + " | ".join(_cell(r["spearman"][label]) for label in labels) + " |")
    sizes = ", ".join(f"{label} {n} pairs" for label, n in report["pairs"].items())
    prompt = next(r["prompt"] for r in rows if r["variant"] == "teacher (default prompt)")
    text = "\n".join([
        "# `kalbert transplant` ablation at zero further-pretraining tokens", "",
        "Produced by:", "", "```", command, "```", "",
        "**These are zero-training numbers**: every model is scored exactly as built (a transplant, or a "
        "random initialisation), with no pretraining and no STS training. MLM/SOP accuracy per variant and "
        "KorSTS after STS training per variant are **not** in this table; they need further-pretraining "
        "runs (see pretrain_transplant_vs_scratch.md for the E128 L6 pair).", "",
        f"Zero-shot sentence similarity: Spearman x100 between the cosine of attention-masked mean-pooled "
        f"last hidden states and the gold scores ({sizes}; dev splits only). Each model is encoded with its "
        f"own tokenizer, max length {MAX_LENGTH}, batch {BATCH_SIZE}, {THREADS} threads. The transplants and "
        f"the scratch model get the raw sentence; the teacher row runs the teacher as SentenceTransformer "
        f"does (its default prompt {prompt!r}, its own mean pooling) and once more without the prompt, "
        f"which is the condition the transplants are in. The scratch row is the E128 L6 transplant's "
        f"AlbertConfig randomly initialised (torch seed {DEFAULT_SEED}) with the same tokenizer. Parameters "
        f"count the encoder without pretraining heads; variance kept is the share of the centred teacher "
        f"embeddings' second moment kept by the E-1 principal directions.", "",
        *table, "", f"![bars]({NAME}.png)", "",
        f"Conditions: {args.note} (load average at the end: {report['load_average'][0]:.2f}; "
        f"{report['seconds']:.0f} s in all)", "",
    ])
    atomic_write_text(RESULTS / f"{NAME}.md", text)
    print(f"wrote {RESULTS / NAME}.{{json,md,png}}")


if __name__ == "__main__":
    main()
