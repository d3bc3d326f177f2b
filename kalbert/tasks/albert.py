"""The model folders the task fine-tunings (multiple choice, extractive QA) start from: ALBERT checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

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
