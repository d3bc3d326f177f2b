"""The final export: an HF model folder that loads anywhere, with its tokenizer, metadata, card and curves."""

from __future__ import annotations

import shutil
from pathlib import Path

from kalbert.artifact import Kind
from kalbert.pretrain.card import write_model_card
from kalbert.pretrain.curves import plot_curves, read_metrics
from kalbert.stage import artifact_folder, write_record

TOKENIZER_FILES = ("spiece.model", "spiece.vocab", "tokenizer.json", "tokenizer_config.json")
CURVES_PNG = "learning_curves.png"


def export_model(model, vocab_dir: Path, out: Path, meta: dict, metrics_path: Path, title: str) -> Path:
    """Write ``out``: model weights + config, tokenizer files, kalbert.json, README.md (titled ``title``), curves."""
    records = read_metrics(metrics_path)
    held = [r for r in records if r["split"] == "heldout"]
    final_eval = {k: v for k, v in held[-1].items() if k not in ("step", "split")} if held else None
    with artifact_folder(out, Kind.PRETRAINED_MODEL, overwrite=True) as tmp:
        model.save_pretrained(tmp)
        for name in TOKENIZER_FILES:
            if (vocab_dir / name).exists():
                shutil.copy2(vocab_dir / name, tmp / name)
        png = None
        if records:
            plot_curves(records, tmp / CURVES_PNG, f"{title}: {meta['model']}")
            png = CURVES_PNG
        meta = write_record(tmp, {**meta, "final_eval": final_eval}, Kind.PRETRAINED_MODEL, [meta["data"]])
        write_model_card(tmp, title, meta, final_eval, png)
    return out


def load_pretrained(folder: str | Path):
    """``(model, tokenizer)`` of an exported folder: AutoModelForPreTraining + AutoTokenizer, nothing custom."""
    from transformers import AutoModelForPreTraining, AutoTokenizer

    return AutoModelForPreTraining.from_pretrained(str(folder)), AutoTokenizer.from_pretrained(str(folder))
