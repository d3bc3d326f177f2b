"""What the runner needs from a model: a name, a kind, and one vector per sentence, compared by cosine.

Sentence models are loaded through :mod:`kalbert.sentence` (whose ``encode`` embeds each distinct
sentence once, in length-sorted batches), so a benchmark scores exactly what users get from
``SentenceTransformer(path)``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kalbert.artifact import MODULES_FILE, is_sentence_model
from kalbert.errors import KalbertError


class Encoder(Protocol):
    """Anything that maps sentences of one language to vectors compared by cosine."""

    name: str
    kind: str  # "kalbert" or "baseline"
    path: str | None

    def encode(self, sentences: list[str], lang: str) -> Any:
        """One row per sentence: a dense array or a scipy sparse matrix."""

    def settings(self) -> dict[str, Any]:
        """What decides the vectors, recorded in the results file."""


class SentenceModelEncoder:
    """A SentenceTransformer folder (a kalbert sentence model, or a packaged baseline)."""

    def __init__(
        self,
        path: str | Path,
        name: str | None = None,
        kind: str = "kalbert",
        batch_size: int = 32,
        progress: bool = True,
        backend: str = "torch",
        bf16: bool = False,
    ) -> None:
        from kalbert.sentence import load_sentence_model

        path = Path(path).expanduser()
        if not path.is_dir():
            raise KalbertError(
                f"model folder {path} not found",
                "pass a sentence-model folder, or --model tfidf|minilm for a baseline",
            )
        if not is_sentence_model(path):
            raise KalbertError(
                f"{path} is not a sentence model (no {MODULES_FILE})",
                "benchmark a folder made by `kalbert sbert`, or use --model tfidf|minilm",
            )
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.model = load_sentence_model(path, device="cpu", backend=backend)
        self.folder = path
        self.backend = backend
        self.name = name or path.resolve().name
        self.kind = kind
        self.path = str(path) if kind == "kalbert" else None
        self.batch_size = batch_size
        self.progress = progress
        self.bf16 = bf16
        """encode under bf16 autocast (PyTorch backend only)"""

    @property
    def sentence_transformer(self):
        """The model itself, for retrieval's query and document encoding with its prompts."""
        return self.model

    @property
    def languages(self) -> list[str]:
        from kalbert.artifact import folder_languages

        return folder_languages(self.folder)

    @property
    def fingerprint(self) -> str:
        """Changes whenever the folder's vectors could (the retrieval vector cache's key)."""
        from kalbert.teachers.encoders import folder_fingerprint

        return f"{self.folder.resolve().name}-{folder_fingerprint(self.folder)}-{self.backend}"

    def encode(self, sentences: list[str], lang: str) -> np.ndarray:
        from kalbert.precision import autocast
        from kalbert.sentence import encode

        with autocast("cpu", self.bf16):
            return encode(self.model, sentences, batch_size=self.batch_size, show_progress=self.progress)

    def settings(self) -> dict[str, Any]:
        from kalbert.teachers.encoders import token_limit

        return {
            "backend": self.backend,
            "precision": "bf16" if self.bf16 else "fp32",
            "batch_size": self.batch_size,
            "max_seq_length": token_limit(self.model),
            "dimension": self.model.get_embedding_dimension(),
        }
