"""What every task fine-tuning (multiple choice, extractive QA) shares: the ALBERT check and the optimiser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kalbert.errors import KalbertError


def check_albert(path: str | Path, purpose: str) -> Path:
    """``path`` when it holds an ALBERT checkpoint, else a one-line error naming ``purpose``."""
    path = Path(path).expanduser()
    config = path / "config.json"
    if not config.is_file():
        raise KalbertError(f"{path} is not a model folder (no config.json)",
                           "pass an ALBERT checkpoint folder, e.g. one written by `kalbert pretrain` or "
                           "`kalbert transplant`")
    model_type = json.loads(config.read_text(encoding="utf-8")).get("model_type")
    if model_type != "albert":
        raise KalbertError(f"{path} holds a '{model_type}' model, not an ALBERT",
                           f"{purpose} needs an ALBERT checkpoint")
    return path


def adamw_with_warmup(model: Any, lr: float, weight_decay: float, warmup_ratio: float, steps: int):
    """AdamW (no decay on biases and LayerNorm weights) and a linear warmup-then-decay schedule."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    decay = [p for p in model.parameters() if p.ndim > 1]
    rest = [p for p in model.parameters() if p.ndim <= 1]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}], lr=lr)
    return optimizer, get_linear_schedule_with_warmup(optimizer, int(warmup_ratio * steps), steps)
