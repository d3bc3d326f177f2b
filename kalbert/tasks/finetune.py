"""What every task fine-tuning (multiple choice, extractive QA) shares: the ALBERT check first, and bf16
autocast, which CPUs with AVX512-BF16/AMX run about 1.5x faster than fp32."""

from __future__ import annotations

import contextlib
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


def bf16_autocast(device: Any) -> contextlib.AbstractContextManager:
    """bf16 autocast where the hardware has native bf16 (pretraining's rule); a no-op elsewhere."""
    import torch

    from kalbert.pretrain.speed import native_bf16

    device = torch.device(device)
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=native_bf16(device) is not None)
