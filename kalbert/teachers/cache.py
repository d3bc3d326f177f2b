"""A teacher-embedding cache built for hours of encoding: sharded, append-only, resumable.

One folder per teacher fingerprint holds ``teacher.json`` (who wrote it) and shards
``shard-000000.npz`` (sentence keys + float16 vectors). Each shard is written atomically after its
sentences are encoded, so a kill at any moment loses at most the shard in progress, and a rerun
encodes only what no shard holds. Keys are hashes of the exact sentence text, so adding corpora
reuses every vector already computed, whatever the order.
"""

from __future__ import annotations

import hashlib
import io
import json
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from kalbert.config import DEFAULT_SEED
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_bytes, atomic_write_json, kalbert_cache
from kalbert.precision import Precision
from kalbert.teachers.backends import Teacher, describe

KEY_BYTES = 16
META_FILE = "teacher.json"


@dataclass
class TeacherEncodeConfig:
    """Corpus sentences to encode ahead of `kalbert sbert distill`, which samples them the same way."""

    corpus: list[str]
    """corpus names (kalbert data list) or files"""
    teacher: str = "multilingual-e5-small"
    """multilingual-e5-small, use-multilingual, all-MiniLM-L6-v2, or a SentenceTransformer folder"""
    max_sentences: int = 150_000
    """sentences sampled (language-balanced) from the corpora"""
    seed: int = DEFAULT_SEED
    """seed of the sentence sample (distillation's --seed picks the same sentences)"""
    cache_dir: str | None = None
    """embedding cache (default ~/.cache/kalbert/teacher-embeddings)"""
    precision: Precision = "fp32"
    """fp32 (default: the vectors `kalbert sbert distill` reads, the same on every CPU), bf16 (faster where the
    CPU has native bf16; the vectors a bf16 pretraining run's --distill-teacher reads, cached apart) or auto"""


def default_cache_dir() -> Path:
    """Where teacher vectors are cached unless told otherwise: shared by sentence distillation and pretraining."""
    return kalbert_cache() / "teacher-embeddings"


def open_cache(teacher: Teacher, cache_dir: str | None) -> EmbeddingCache:
    """The cache of ``teacher``'s vectors under ``cache_dir`` (None: :func:`default_cache_dir`)."""
    return EmbeddingCache(Path(cache_dir).expanduser() if cache_dir else default_cache_dir(), teacher)


def sentence_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=KEY_BYTES).digest()


class EmbeddingCache:
    """Teacher vectors of sentences, read from shards under ``root/<fingerprint>`` and filled on demand."""

    def __init__(self, root: str | Path, teacher: Teacher, shard_size: int = 2048) -> None:
        self.teacher, self.shard_size = teacher, shard_size
        self.folder = Path(root).expanduser() / teacher.fingerprint
        self.folder.mkdir(parents=True, exist_ok=True)
        self._check_owner()
        self._rows: dict[bytes, int] = {}
        self._blocks: list[np.ndarray] = []
        self._size = 0
        self._shards = sorted(self.folder.glob("shard-*.npz"))
        for shard in self._shards:
            self._add(*self._read(shard))

    def _check_owner(self) -> None:
        meta_path = self.folder / META_FILE
        expected = describe(self.teacher)
        if meta_path.is_file():
            found = json.loads(meta_path.read_text(encoding="utf-8"))
            if (found.get("fingerprint"), found.get("dimension")) != (expected["fingerprint"], expected["dimension"]):
                raise KalbertError(f"the embedding cache {self.folder} was written by teacher "
                                   f"{found.get('name')} ({found.get('fingerprint')}), not {self.teacher.name}",
                                   "remove that folder or pass another --cache-dir")
        else:
            atomic_write_json(meta_path, expected)

    def _read(self, shard: Path) -> tuple[np.ndarray, np.ndarray]:
        try:
            with np.load(shard) as data:
                keys, vectors = data["keys"], data["vectors"]
        except (OSError, ValueError, KeyError) as exc:
            raise KalbertError(f"cache shard {shard} is unreadable ({exc})", "delete that file and rerun") from None
        if vectors.shape[1] != self.teacher.dimension or len(keys) != len(vectors):
            raise KalbertError(f"cache shard {shard} holds {vectors.shape[1]}-d vectors, the teacher gives "
                               f"{self.teacher.dimension}", "delete the cache folder and rerun")
        return keys, vectors

    def _add(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        for i, key in enumerate(keys):
            self._rows.setdefault(key.tobytes(), self._size + i)
        self._blocks.append(vectors)
        self._size += len(vectors)

    def __len__(self) -> int:
        return len(self._rows)

    def missing(self, sentences: list[str]) -> list[str]:
        """Distinct sentences that no shard holds yet, in first-seen order."""
        return [s for s in dict.fromkeys(sentences) if sentence_key(s) not in self._rows]

    def fill(self, sentences: list[str], progress: bool = True) -> int:
        """Encode every sentence the cache lacks, shortest first, one atomically written shard at a time."""
        todo = sorted(self.missing(sentences), key=len)
        with tqdm(total=len(todo), unit=" sent", desc=f"teacher {self.teacher.name}", disable=not progress,
                  smoothing=0.1, mininterval=2) as bar:
            for start in range(0, len(todo), self.shard_size):
                chunk = todo[start: start + self.shard_size]
                vectors = self.teacher.encode(chunk).astype(np.float16)
                keys = np.frombuffer(b"".join(sentence_key(s) for s in chunk), dtype=np.uint8).reshape(-1, KEY_BYTES)
                buffer = io.BytesIO()
                np.savez(buffer, keys=keys, vectors=vectors)
                # a random suffix: two processes filling one cache never write the same shard name
                shard = self.folder / f"shard-{len(self._shards):06d}-{uuid.uuid4().hex[:8]}.npz"
                atomic_write_bytes(shard, buffer.getvalue())
                self._shards.append(shard)
                self._add(keys, vectors)
                bar.update(len(chunk))
        return len(todo)

    def vectors(self, sentences: list[str]) -> np.ndarray:
        """float32 [len(sentences), dim] teacher vectors; every sentence must be cached (see :meth:`fill`)."""
        if not sentences:
            return np.zeros((0, self.teacher.dimension), dtype=np.float32)
        table = np.concatenate(self._blocks) if len(self._blocks) > 1 else self._blocks[0]
        self._blocks = [table]
        try:
            rows = [self._rows[sentence_key(s)] for s in sentences]
        except KeyError:
            raise RuntimeError("vectors() asked for a sentence that fill() has not encoded") from None
        return table[rows].astype(np.float32)
