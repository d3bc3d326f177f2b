"""Load a sentence model and turn sentences into embeddings, the one way every kalbert stage does it.

``encode`` is a thin layer over ``SentenceTransformer.encode`` (so a folder gives the same vectors in
kalbert and in plain sentence-transformers) that adds what callers kept redoing: duplicate
sentences are encoded once, and the result is always a float32 ``numpy`` array in input order.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kalbert.artifact import MODULES_FILE, is_sentence_model
from kalbert.errors import KalbertError
from kalbert.sentence import BACKENDS
from kalbert.sentence.backends import onnx_file
from kalbert.sentence.export import build_sentence_model
from kalbert.teachers.encoders import unique_rows
from kalbert.weights import check_weight_files

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

SHIPPED_MODEL = Path(__file__).resolve().parents[2] / "models" / "sbert-ko-zh-retrieval"
"""The Korean+Chinese sentence model for search committed in the repository's ``models/`` (question -> passage,
512 tokens): the default where one is needed (``kalbert search build``)."""


def default_sentence_model() -> Path:
    """The shipped model's folder, or a one-line error where this install has no ``models/`` folder."""
    if not is_sentence_model(SHIPPED_MODEL):
        raise KalbertError(f"the shipped sentence model {SHIPPED_MODEL} is not here (kalbert is not run from a "
                           "checkout)", "pass --model FOLDER")
    return SHIPPED_MODEL


def load_sentence_model(path: str | Path, device: str | None = None, pooling: str = "mean",
                        backend: str = "torch") -> SentenceTransformer:
    """A SentenceTransformer from a sentence-model folder, or from a plain ALBERT checkpoint.

    A plain checkpoint (``config.json`` + weights + tokenizer, no ``modules.json``) is wrapped in memory
    with ``pooling`` ("mean" or "cls"), so raw pretrained models can be benchmarked without an export.
    ``backend`` "onnx" / "onnx-int8" runs the Transformer from the folder's ONNX files (written by
    ``kalbert sbert export --backend onnx``), refusing files older than the weights.
    Loading never touches the network; damaged weight files are refused in one line first.
    """
    if backend not in BACKENDS:
        raise KalbertError(f"unknown backend {backend!r}", f"use one of {', '.join(BACKENDS)}")
    path = Path(path).expanduser()
    if not path.is_dir():
        raise KalbertError(f"model folder {path} not found",
                           "pass a folder made by `kalbert sbert export|train|distill`")
    check_weight_files(path)
    if not is_sentence_model(path):
        if backend != "torch":
            raise KalbertError(f"{path} is not a sentence model (no {MODULES_FILE}), so it has no ONNX files",
                               "export it with `kalbert sbert export`, then `kalbert sbert export --backend onnx`")
        return build_sentence_model(path, pooling=pooling, device=device)
    from sentence_transformers import SentenceTransformer

    options: dict[str, Any] = {}
    if backend != "torch":
        options = {"backend": "onnx", "model_kwargs": {"file_name": onnx_file(path, backend)}}
    try:
        return SentenceTransformer(str(path), device=device, local_files_only=True, **options)
    except (OSError, ValueError, KeyError) as exc:
        raise KalbertError(f"cannot load the sentence model in {path}: {str(exc).splitlines()[0]}",
                           "re-export it with `kalbert sbert export`") from None


def encode(model: SentenceTransformer, sentences: Sequence[str], batch_size: int = 64, normalize: bool = False,
           show_progress: bool = False) -> np.ndarray:
    """Embeddings of ``sentences`` as a float32 array ``[len(sentences), dim]``, in input order.

    Each distinct sentence is encoded once; sentence-transformers sorts them by length so that a batch
    holds sentences of similar length (little padding).
    """
    if isinstance(sentences, str):
        raise TypeError("encode() takes a sequence of sentences, not one string")
    dim = model.get_embedding_dimension()
    if len(sentences) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    return unique_rows(lambda unique: model.encode(unique, batch_size=batch_size, convert_to_numpy=True,
                                                   normalize_embeddings=normalize, show_progress_bar=show_progress),
                       sentences)
