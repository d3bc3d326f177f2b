"""Query and passage vectors of a sentence model or teacher for retrieval, with its prompts, cached on disk.

Queries go through ``SentenceTransformer.encode_query`` and passages through ``encode_document``, so a
model's own prompts apply exactly as sentence-transformers and MTEB apply them (``query``; ``document``,
``passage`` or ``corpus``; else the default prompt). Passages are read at the model's own
``max_seq_length``; how many are longer is counted and recorded, never hidden.

Encoding thousands of paragraphs at 512 tokens takes minutes on a small CPU, so vectors go through the
teacher-embedding cache (:class:`kalbert.teachers.cache.EmbeddingCache`: sharded, resumable, keyed by text),
one folder per model, role prompt, token limit and precision. Every vector is read back from the cache
(float16, renormalised), so a first run and a rerun score the same numbers.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.io import kalbert_cache
from kalbert.teachers.backends import ENCODE_METHOD, role_prompt
from kalbert.teachers.cache import EmbeddingCache


def default_cache_dir() -> Path:
    """Where retrieval vectors are cached unless told otherwise (rebuildable)."""
    return kalbert_cache() / "bench-embeddings"


def folder_fingerprint(folder: Path) -> str:
    """Names, sizes and modification times of a model folder's files: changes whenever its vectors could."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "README.md"):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


class RoleEncoder:
    """One role (query or passage) of a dense encoder, in the teacher contract the embedding cache reads."""

    def __init__(self, encoder: Any, role: str, lang: str) -> None:
        from kalbert.sentence.encoder import token_limit

        self.encoder, self.role, self.lang = encoder, role, lang
        self.model = encoder.sentence_transformer
        self.prompt = role_prompt(self.model, role) if self.model is not None else ""
        self.max_seq_length = token_limit(self.model) if self.model is not None else None
        settings = encoder.settings()
        self.name = f"{encoder.name} ({role})"
        self.languages = list(encoder.languages)
        self.dimension = int(settings["dimension"])
        self.backends = (str(settings.get("backend", "reference")),)
        what = [encoder.fingerprint, role, self.prompt, self.max_seq_length, settings.get("precision")]
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", encoder.name).strip("-")[:40]
        self.fingerprint = f"bench-{slug}-{hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]}"

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of ``texts`` as the model embeds this role (an encoder without prompts: as it is)."""
        if self.model is None:
            vectors = np.asarray(self.encoder.encode(texts, self.lang), dtype=np.float32)
        else:
            from kalbert.precision import autocast

            with autocast(self.model.device, self.encoder.bf16):
                vectors = getattr(self.model, ENCODE_METHOD[self.role])(
                    list(texts), batch_size=self.encoder.batch_size, convert_to_numpy=True, show_progress_bar=False)
            vectors = np.asarray(vectors, dtype=np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def over_limit(self, texts: list[str]) -> int:
        """How many of ``texts`` (with the prompt) the model truncates at its ``max_seq_length``."""
        tokenizer = getattr(self.model, "tokenizer", None)
        if self.max_seq_length is None or not callable(tokenizer):
            return 0
        ids = tokenizer([self.prompt + text for text in texts], add_special_tokens=True, verbose=False)["input_ids"]
        return sum(len(row) > self.max_seq_length for row in ids)


def dense_vectors(role: RoleEncoder, texts: list[str], cache_dir: str | Path | None = None,
                  progress: bool = True) -> np.ndarray:
    """Unit float32 vectors of ``texts`` for ``role``, encoding only what the cache lacks."""
    cache = EmbeddingCache(Path(cache_dir).expanduser() if cache_dir else default_cache_dir(), role)
    cache.fill(texts, progress=progress)
    vectors = cache.vectors(texts)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
