"""Shipped weights stored as float16: half the size on disk (what keeps a shipped model under the repository's
40 MB), loaded and computed in float32, because config.json keeps ``dtype: float32``."""

from __future__ import annotations

from pathlib import Path


def store_float16(folder: Path) -> None:
    """Rewrite every ``*.safetensors`` under ``folder`` with its floating-point tensors in float16."""
    from safetensors.torch import load_file, save_file

    for weights in folder.rglob("*.safetensors"):
        tensors = {name: t.half() if t.is_floating_point() else t for name, t in load_file(weights).items()}
        save_file(tensors, weights, metadata={"format": "pt"})
