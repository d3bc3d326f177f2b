"""Sentence models: export ALBERT checkpoints to SentenceTransformer folders, train them on STS/NLI
pairs, distil a teacher into them, and guard against collapse (search with them: :mod:`kalbert.search`).

Names are imported on first use, so ``import kalbert.sentence`` does not pull in torch.
"""

from __future__ import annotations

import importlib
import typing
from typing import Any, Literal

_WHERE = {
    "encode": "encoder", "load_sentence_model": "encoder", "is_sentence_model": "kalbert.artifact",
    "ExportConfig": "export", "export_sentence_model": "export", "build_sentence_model": "export",
    "SentenceTrainConfig": "config", "SentenceTrainResult": "train", "train_sentence_model": "train",
    "DistillConfig": "config", "DistillResult": "distill", "distill_student": "distill",
    "LoopConfig": "config", "check_collapse": "collapse", "evaluate_sts": "evaluate",
}
# How a sentence model runs (load_sentence_model's backend): here, so the CLI can offer them without importing numpy.
Backend = Literal["torch", "onnx", "onnx-int8"]
BACKENDS = typing.get_args(Backend)
__all__ = sorted([*_WHERE, "BACKENDS", "Backend"])


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'kalbert.sentence' has no attribute {name!r}")
    module = _WHERE[name]
    return getattr(importlib.import_module(module if "." in module else f"kalbert.sentence.{module}"), name)
