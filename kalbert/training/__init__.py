"""What every fine-tuning stage shares (sentence and static training, multiple choice, extractive QA), laid out
as torchtune's ``training`` package: the loop's settings (:mod:`.config`), the optimiser and schedule
(:mod:`.optim`), best-checkpoint keeping (:mod:`.best`), the device (:mod:`.device`), the resumable working
folder (:mod:`.resume`) and the one loop they all run (:mod:`.loop`).

Names are imported on first use, so ``kalbert.training.config`` (read by every fine-tuning verb's --help) loads
without torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "LoopConfig": "config", "BestCheckpoint": "best", "default_device": "device", "RunFolder": "resume",
    "Evaluation": "loop", "FitResult": "loop", "shuffled_batches": "loop", "train_loop": "loop",
    "adamw": "optim", "decay_split": "optim", "linear_warmup": "optim",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'kalbert.training' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kalbert.training.{_WHERE[name]}"), name)
