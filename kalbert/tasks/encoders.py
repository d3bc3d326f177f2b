"""The model folders the task fine-tunings (multiple choice, extractive QA) start from, and the inputs they take.

Both task heads exist for ALBERT (the kit's models) and BERT (multilingual-e5-small, the teacher they are
transplanted from), so the teacher fine-tuned on the same splits is the reference point for the small models.
A SentenceTransformer folder works when its Transformer sits at its root, as `kalbert teacher export` writes it.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

from kalbert.errors import KalbertError
from kalbert.teachers.backends import E5_NAME, e5_folder

ENCODER_TYPES = ("albert", "bert")
"""``model_type`` values whose ...ForQuestionAnswering / ...ForMultipleChoice heads the tasks load"""


def check_encoder(path: str | Path, purpose: str) -> Path:
    """``path`` when it holds an ALBERT or BERT checkpoint, else a one-line error naming ``purpose``."""
    path = Path(path).expanduser()
    config = path / "config.json"
    if not config.is_file():
        raise KalbertError(f"{path} is not a model folder (no config.json)",
                           f"pass an ALBERT or BERT folder, e.g. one written by `kalbert pretrain` or "
                           f"`kalbert transplant`, or {E5_NAME}")
    model_type = json.loads(config.read_text(encoding="utf-8")).get("model_type")
    if model_type not in ENCODER_TYPES:
        raise KalbertError(f"{path} holds a '{model_type}' model, not one of {', '.join(ENCODER_TYPES)}",
                           f"{purpose} needs an ALBERT or BERT checkpoint")
    return path


def encoder_folder(model: str, purpose: str) -> Path:
    """The checked folder to fine-tune: ``model`` itself, or the exported teacher for the name
    multilingual-e5-small (exported on first use)."""
    return check_encoder(e5_folder() if model == E5_NAME else model, purpose)


def encoder_inputs(model, batch: dict[str, Any]) -> dict[str, Any]:
    """``batch`` without ``token_type_ids`` where ``model`` has no room for them: its forward does not take
    them, or it has a single token type (segment ids of 1 would index past its table)."""
    takes = "token_type_ids" in inspect.signature(model.forward).parameters
    if takes and getattr(model.config, "type_vocab_size", 0) > 1:
        return batch
    return {key: value for key, value in batch.items() if key != "token_type_ids"}
