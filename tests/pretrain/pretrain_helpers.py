"""Helpers shared by the pretraining tests: a tiny model shape and a short, fully exercised run."""

from __future__ import annotations

from pathlib import Path

from kalbert.pretrain import ModelConfig, PretrainConfig

SEQ_LEN = 64


def tiny_model() -> ModelConfig:
    """Hidden 32, 2 layers: a few seconds per run."""
    return ModelConfig(preset="tiny", embedding_size=16, hidden_size=32, num_layers=2, num_heads=2,
                       intermediate_size=64)


def tiny_run(data: Path, out: Path, **overrides) -> PretrainConfig:
    """A short run on ``data`` with every periodic action frequent enough to be exercised."""
    settings = {"max_steps": 6, "batch_size": 8, "eval_every": 3, "eval_instances": 16, "save_every": 3,
                "log_every": 1, "tensorboard": False, "warmup_ratio": 0.2, "threads": 1, "precision": "fp32",
                **overrides}  # fp32 everywhere: the parity tests compare to 1e-5
    return PretrainConfig(data=str(data), out=str(out), model=tiny_model(), **settings)
