"""What a sentence-model folder holds: the files that belong to one set of weights, and the module names its
card lists. (Whether a folder is a sentence model at all: :func:`kalbert.artifact.is_sentence_model`.)

Below the loader (``encoder``), the exporter (``export``) and the ONNX tools (``backends``), which all
need these and would otherwise import each other.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

# files that belong to one set of weights: a folder copied to hold other weights must not keep them
DERIVED = ("onnx", "training_log.json")


def drop_derived_files(folder: Path) -> None:
    """Remove the ONNX exports and training log of a copied folder whose weights are about to be replaced."""
    for name in DERIVED:
        path = folder / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.is_file():
            path.unlink()


def module_names(model: SentenceTransformer) -> list[str]:
    """The class names of the model's modules, in order (Transformer, Pooling, ...), as the card lists them."""
    return [type(module).__name__ for module in model]
