"""The static-model folder: what sentence-transformers, model2vec and ``kalbert static train`` read.

Layout (sentence-transformers' own ``StaticEmbedding`` save, which model2vec 0.10 also loads):

- ``modules.json``, ``config_sentence_transformers.json``: one ``StaticEmbedding`` module at the root;
- ``model.safetensors`` (``embedding.weight``: one row per piece id, frequency weight folded in) and
  ``tokenizer.json`` (the vocabulary's, so encoding needs no mecab/jieba);
- ``kalbert_static.safetensors``: the piece weights and the teacher projection (PCA mean and axes), so
  ``kalbert static train`` can refit the unweighted vectors in the teacher's reduced space;
- ``spiece.model`` (the unigram scores the weights come from), ``kalbert.json`` and the README card.

A sentence vector is the mean of its pieces' rows, i.e. the weight-scaled mean of the piece vectors;
rows are PCA-ordered, so any prefix (``truncate_dim``) is itself a usable, smaller embedding.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kalbert.artifact import Kind, read_meta
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_text
from kalbert.stage import write_record
from kalbert.static.card import render_card
from kalbert.vocab.files import SPIECE

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

TOKENIZER_FILE = "tokenizer.json"
EXTRAS_FILE = "kalbert_static.safetensors"
ROWS_FILE = "model.safetensors"


@dataclass
class StaticVectors:
    """Unweighted piece vectors, their frequency weights, the teacher projection and the vocabulary folder."""

    vectors: np.ndarray
    """float32 [pieces, dim]"""
    weights: np.ndarray
    """float32 [pieces]; the saved rows are ``vectors * weights``"""
    projection_mean: np.ndarray
    """float32 [teacher dim]: the mean subtracted before projecting a teacher vector"""
    projection: np.ndarray
    """float32 [dim, teacher dim]: PCA axes, largest variance first"""
    vocab: Path
    """folder with the ``spiece.model`` and ``tokenizer.json`` the piece ids refer to"""

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def rows(self) -> np.ndarray:
        return (self.vectors * self.weights[:, None]).astype(np.float32)

    def project(self, teacher_vectors: np.ndarray) -> np.ndarray:
        """Teacher vectors in the model's reduced space (what a sentence's mean row should match)."""
        return ((teacher_vectors - self.projection_mean) @ self.projection.T).astype(np.float32)

    def truncated(self, dim: int) -> StaticVectors:
        """The first ``dim`` PCA dimensions (vectors and projection alike)."""
        if dim > self.dim:
            raise KalbertError(f"--dim {dim} is wider than the {self.dim}-d initial model",
                               f"pass --dim {self.dim} or less, or distil a wider model")
        return replace(self, vectors=self.vectors[:, :dim].copy(), projection=self.projection[:dim].copy())

    def tokenizer(self) -> Tokenizer:
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(self.vocab / TOKENIZER_FILE))


def vocab_files(folder: str | Path) -> Path:
    """A folder holding both ``spiece.model`` and ``tokenizer.json`` (a vocabulary or a static model)."""
    folder = Path(folder).expanduser()
    missing = [name for name in (SPIECE, TOKENIZER_FILE) if not (folder / name).is_file()]
    if missing:
        raise KalbertError(f"{folder} has no {' or '.join(missing)}", "pass a folder made by `kalbert vocab build`")
    return folder


def to_sentence_transformer(static: StaticVectors) -> SentenceTransformer:
    """The model as sentence-transformers runs it (what the saved folder loads as)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    module = StaticEmbedding(static.tokenizer(), embedding_weights=torch.from_numpy(static.rows()))
    return SentenceTransformer(modules=[module], device="cpu")


def save_static_model(static: StaticVectors, folder: Path, meta: dict[str, Any], parents: Iterable[str | Path],
                      command: str) -> None:
    """Write the whole folder into ``folder`` (an empty temp folder from :func:`kalbert.stage.artifact_folder`);
    ``parents`` and ``command`` complete its record."""
    from safetensors.numpy import save_file

    model = to_sentence_transformer(static)
    model.save(str(folder), create_model_card=False)
    save_file({"weights": static.weights, "projection_mean": static.projection_mean,
               "projection": static.projection}, str(folder / EXTRAS_FILE))
    shutil.copyfile(static.vocab / SPIECE, folder / SPIECE)
    meta = write_record(folder, meta, Kind.STATIC_MODEL, parents, command=command)
    atomic_write_text(folder / "README.md", render_card(meta))


def load_static_model(folder: str | Path) -> tuple[StaticVectors, dict[str, Any]]:
    """The vectors and ``kalbert.json`` of a folder written by ``kalbert static distill|train``."""
    from safetensors.numpy import load_file

    folder = Path(folder).expanduser()
    meta = read_meta(folder, expect=Kind.STATIC_MODEL)
    try:
        rows = load_file(str(folder / ROWS_FILE))["embedding.weight"]
        extras = load_file(str(folder / EXTRAS_FILE))
    except (OSError, KeyError) as exc:
        raise KalbertError(f"cannot read the static model in {folder}: {exc}",
                           "rebuild it with `kalbert static distill`") from None
    weights = extras["weights"]
    vectors = np.divide(rows, weights[:, None], out=np.zeros_like(rows), where=weights[:, None] > 0)
    return StaticVectors(vectors, weights, extras["projection_mean"], extras["projection"], vocab_files(folder)), meta
