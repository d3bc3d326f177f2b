"""Reading `kalbert pretrain` run folders and scoring their models on held-out instances: the pretraining
benchmarks' shared part.

Every model is scored with the trainer's evaluation masks (key ``(seed, 1, 0)``), so two models given the same
seed and masking are scored on the very same masked tokens.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch

from kalbert.pretrain.batches import make_batch
from kalbert.pretrain.config import run_bf16
from kalbert.pretrain.data import PretrainingData
from kalbert.pretrain.masking import MaskingConfig
from kalbert.pretrain.objective import PretrainingObjective

EVAL_STREAM = 1  # the trainer's evaluation mask stream: key (seed, 1, 0)
HANGUL = 1
HAN = 2


def named_run(text: str) -> tuple[str, Path]:
    """``NAME=FOLDER`` of a ``--run`` argument: the name a run gets in a table, and its folder."""
    name, sep, folder = text.rpartition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=FOLDER")
    return name, Path(folder)


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _language_of_pieces(data: PretrainingData) -> np.ndarray:
    """Per vocabulary id: HANGUL for a piece with Hangul, HAN for one with Han characters, 0 otherwise."""
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=str(data.vocab_dir / "spiece.model"))
    kinds = np.zeros(processor.get_piece_size(), dtype=np.int8)
    for i in range(processor.get_piece_size()):
        piece = processor.id_to_piece(i)
        if any("\uac00" <= c <= "\ud7a3" or "\u3131" <= c <= "\u318e" for c in piece):
            kinds[i] = HANGUL
        elif any("\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf" for c in piece):
            kinds[i] = HAN
    return kinds


def language_groups(data: PretrainingData, n: int) -> dict[str, list[int]]:
    """The first ``n`` held-out instances split into Korean and Chinese, by which script most of their pieces use."""
    kinds = _language_of_pieces(data)
    heldout = data.split("heldout")
    groups: dict[str, list[int]] = {"ko": [], "zh": []}
    for i in range(n):
        counts = np.bincount(kinds[np.asarray(heldout[i].ids)], minlength=3)
        groups["ko" if counts[HANGUL] >= counts[HAN] else "zh"].append(i)
    return groups


def majority_share(labels: list[int]) -> float:
    """Accuracy of always answering the commoner SOP label."""
    share = sum(labels) / max(len(labels), 1)
    return max(share, 1 - share)


@torch.no_grad()
def score_heldout(model_dir: Path, config: dict, data: PretrainingData, indices: list[int] | np.ndarray,
                  seed: int, masking: MaskingConfig | None = None, teacher: np.ndarray | None = None,
                  batch_size: int = 32) -> dict:
    """MLM and SOP accuracy of the exported model in ``model_dir`` on the held-out ``indices``.

    ``config`` is the run's pretraining config (``kalbert.json``): its objective, SOP pooling, bf16 and, unless
    ``masking`` replaces it, its masking. With ``teacher`` (one row per held-out instance) the mean cosine between
    each instance's mean last state and its teacher row is reported too.
    """
    from transformers import AlbertForPreTraining

    model = AlbertForPreTraining.from_pretrained(str(model_dir))
    objective = PretrainingObjective(model, config["objective"], config.get("sop_pooling", "cls")).eval()
    masking = masking or MaskingConfig(**config["masking"])
    heldout = data.split("heldout")
    indices = np.asarray(indices)
    mlm_correct = masked = sop_correct = distill = 0.0
    for first in range(0, len(indices), batch_size):
        part = indices[first : first + batch_size]
        batch = make_batch(heldout, part, (seed, EVAL_STREAM, 0), masking, data.vocab_size, None, teacher)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=run_bf16(config)):
            out = objective(**batch.inputs)
        mlm_correct += float(out["mlm_correct"])
        masked += float(out["masked"])
        sop_correct += float(out.get("sop_correct", 0))
        distill += float(out.get("distill_loss_sum", 0))
    n = max(len(indices), 1)
    scores = {"instances": len(indices), "mlm_accuracy": mlm_correct / max(masked, 1),
              "sop_accuracy": sop_correct / n if objective.sop else None,
              "sop_majority_class_accuracy": majority_share([heldout[int(i)].label for i in indices])}
    if teacher is not None:
        scores["teacher_cosine"] = 1.0 - distill / n
    return scores
