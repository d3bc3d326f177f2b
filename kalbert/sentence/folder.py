"""What makes a folder a sentence model, and the module names its card lists.

Below the loader (``encoder``), the exporter (``export``) and the ONNX tools (``backends``), which all
need these and would otherwise import each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

MODULES_FILE = "modules.json"


def is_sentence_model(path: str | Path) -> bool:
    """True for a SentenceTransformer folder (it has ``modules.json``)."""
    return (Path(path) / MODULES_FILE).is_file()


def module_names(model: SentenceTransformer) -> list[str]:
    """The class names of the model's modules, in order (Transformer, Pooling, ...), as the card lists them."""
    return [type(module).__name__ for module in model]
