"""ALBERT pretraining: SOP data building, dynamic masking, model presets, the trainer and its export.

The notebook-facing API::

    from kalbert.pretrain import DataBuildConfig, PretrainConfig, build_pretraining_data, pretrain, load_pretrained
    data = build_pretraining_data(DataBuildConfig(vocab="vocab/ko-32k", inputs=["kowiki"], out="outputs/data"))
    model_dir = pretrain(PretrainConfig(data=str(data), out="outputs/run", max_steps=1000))
    model, tokenizer = load_pretrained(model_dir)

Names are imported lazily: building data needs neither torch nor transformers, and its worker
processes start faster without them.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "DataBuildConfig": "kalbert.pretrain.data",
    "PretrainingData": "kalbert.pretrain.data",
    "build_pretraining_data": "kalbert.pretrain.data",
    "MaskingConfig": "kalbert.pretrain.masking",
    "PRESETS": "kalbert.pretrain.presets",
    "ModelConfig": "kalbert.pretrain.presets",
    "albert_config": "kalbert.pretrain.presets",
    "count_parameters": "kalbert.pretrain.presets",
    "PretrainConfig": "kalbert.pretrain.config",
    "pretrain": "kalbert.pretrain.trainer",
    "load_pretrained": "kalbert.pretrain.export",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'kalbert.pretrain' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
