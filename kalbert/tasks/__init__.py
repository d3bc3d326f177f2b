"""Fine-tuned task heads on kalbert's ALBERT models and their BERT teacher (multiple choice, extractive QA).

The package's names are imported on first use: its light modules (``configs``, ``idiom_cloze``) must load
without the torch that ``multiple_choice`` brings, so that the task verbs' help and input checks come first.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"MC_TASKS": "kalbert.tasks.configs", "MCTrainConfig": "kalbert.tasks.configs",
            "predict_mc": "kalbert.tasks.multiple_choice", "train_mc": "kalbert.tasks.multiple_choice"}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
