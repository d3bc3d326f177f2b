"""A teacher as an encoder of texts by role, its vectors cached on disk: what the verbs that learn from a
teacher's vectors read (teacher-mined negatives, score distillation, the reranker's mined rows) and what the
benchmark's retrieval tasks score. It lives beside the teachers, under every verb that uses it, so training
never reaches up into the benchmark for it.

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
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kalbert.io import kalbert_cache
from kalbert.teachers.backends import ENCODE_METHOD, Teacher, describe, load_teacher, role_prompt
from kalbert.teachers.cache import EmbeddingCache

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


def role_cache_dir() -> Path:
    """Where role vectors are cached unless told otherwise (rebuildable; named for the benchmark that made it)."""
    return kalbert_cache() / "bench-embeddings"


def token_limit(model: SentenceTransformer) -> int | None:
    """Tokens a sentence is truncated to; None for a static model (``StaticEmbedding``), which reads it whole."""
    limit = model.max_seq_length
    return int(limit) if limit and math.isfinite(limit) else None


def unique_rows(embed: Callable[[list[str]], np.ndarray], sentences: Sequence[str]) -> np.ndarray:
    """``embed`` called once on the distinct sentences; float32 rows come back in input order."""
    unique, inverse = np.unique(np.asarray(sentences, dtype=object), return_inverse=True)
    return np.asarray(embed(list(unique)), dtype=np.float32)[inverse.reshape(-1)]


def folder_fingerprint(folder: Path) -> str:
    """Names, sizes and modification times of a model folder's files: changes whenever its vectors could."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "README.md"):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


class TeacherEncoder:
    """A teacher (:func:`kalbert.teachers.backends.load_teacher`) in the encoder contract the benchmark and
    :class:`RoleEncoder` read: a name, a kind, vectors per language, and the settings that decide them."""

    kind = "baseline"
    path = None

    def __init__(self, teacher: Teacher) -> None:
        self.teacher, self.name = teacher, teacher.name
        self.languages = list(teacher.languages)
        self.fingerprint = teacher.fingerprint
        self.sentence_transformer = getattr(teacher, "model", None)
        """the SentenceTransformer behind a torch teacher (retrieval encodes with its prompts); None for USE"""
        self.batch_size = getattr(teacher, "batch_size", 32)
        self.bf16 = getattr(teacher, "bf16", False)

    def encode(self, sentences: list[str], lang: str) -> np.ndarray:
        return unique_rows(self.teacher.encode, sentences)

    def settings(self) -> dict[str, Any]:
        return {**describe(self.teacher), "precision": "bf16" if getattr(self.teacher, "bf16", False) else "fp32"}


def load_teacher_encoder(spec: str, batch_size: int = 32, bf16: bool = False) -> TeacherEncoder:
    """A teacher by name, folder (a teacher or sentence model) or downloaded hub id, as an encoder."""
    return TeacherEncoder(load_teacher(spec, batch_size=batch_size, bf16=bf16))


class RoleEncoder:
    """One role (query or passage) of a dense encoder, in the teacher contract the embedding cache reads."""

    def __init__(self, encoder: Any, role: str, lang: str) -> None:
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
    cache = EmbeddingCache(Path(cache_dir).expanduser() if cache_dir else role_cache_dir(), role)
    cache.fill(texts, progress=progress)
    vectors = cache.vectors(texts)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
