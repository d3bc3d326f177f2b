"""A teacher-embedding cache built for hours of encoding: sharded, append-only, resumable.

One folder per teacher fingerprint holds ``teacher.json`` (who wrote it) and shards
``shard-000000.npz`` (sentence keys + float16 vectors). Each shard is written atomically after its
sentences are encoded, so a kill at any moment loses at most the shard in progress, and a rerun
encodes only what no shard holds. Keys are hashes of the exact sentence text, so adding corpora
reuses every vector already computed, whatever the order.

A fill may run the teacher on a faster backend than torch fp32 (:mod:`kalbert.teachers.fastest`): only one
whose vectors keep cosine >= 0.999 to torch fp32's, so they share the folder. ``teacher.json`` lists every
completed fill (backend, sentences, seconds, the backend's sentences/s, the probe's min cosine, CPU).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from kalbert.config import DEFAULT_SEED
from kalbert.errors import KalbertError
from kalbert.hardware import cpu_info
from kalbert.io import atomic_write_bytes, atomic_write_json, kalbert_cache
from kalbert.precision import Precision
from kalbert.teachers.backends import Teacher, TeacherBackend, describe
from kalbert.teachers.fastest import choose_backend

log = logging.getLogger(__name__)
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
    teacher_backend: TeacherBackend = "auto"
    """How the teacher encodes what the cache lacks: auto (the fastest backend this CPU runs whose vectors keep
    cosine >= 0.999 to torch fp32 on a probe of 256 of the sentences), torch (fp32), torch-bf16, onnx or
    onnx-int8 (refused below cosine 0.999). Their vectors share one cache."""
    shard: str | None = None
    """I/N: encode only the sentences whose hash falls in share I of N (N processes or machines split the
    work); merge by copying every cache folder's shard-*.npz files into one (then a run without --shard
    finds all cached)."""


def default_cache_dir() -> Path:
    """Where teacher vectors are cached unless told otherwise: shared by sentence distillation and pretraining."""
    return kalbert_cache() / "teacher-embeddings"


def open_cache(teacher: Teacher, cache_dir: str | None, backend: TeacherBackend | None = None) -> EmbeddingCache:
    """The cache of ``teacher``'s vectors under ``cache_dir`` (None: :func:`default_cache_dir`), filled by
    ``backend`` (None: the teacher's reference, as it is)."""
    return EmbeddingCache(Path(cache_dir).expanduser() if cache_dir else default_cache_dir(), teacher,
                          backend=backend)


def sentence_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=KEY_BYTES).digest()


class EmbeddingCache:
    """Teacher vectors of sentences, read from shards under ``root/<fingerprint>`` and filled on demand."""

    def __init__(self, root: str | Path, teacher: Teacher, shard_size: int = 2048,
                 backend: TeacherBackend | None = None) -> None:
        self.teacher, self.shard_size, self.backend = teacher, shard_size, backend
        self.fills: list[dict] = []
        """the records of this object's fills (also appended to ``teacher.json``)"""
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
        """Encode every sentence the cache lacks, shortest first (so each batch pads little), one atomically
        written shard at a time, with the backend :func:`~kalbert.teachers.fastest.choose_backend` picks;
        record the fill's throughput."""
        todo = sorted(self.missing(sentences), key=len)
        if not todo:
            return 0
        started = time.perf_counter()
        choice = choose_backend(self.teacher, self.backend, todo)
        if choice.probe_vectors is not None:  # the reference's vectors of the probe: as good as any
            self._write_shard(choice.probe, choice.probe_vectors)
            probed = set(choice.probe)
            todo = [s for s in todo if s not in probed]
        probed_at = time.perf_counter()
        with tqdm(total=len(todo) + len(choice.probe), initial=len(choice.probe), unit=" sent",
                  desc=f"teacher {self.teacher.name} ({choice.backend})", disable=not progress, smoothing=0.1,
                  mininterval=2) as bar:
            for start in range(0, len(todo), self.shard_size):
                chunk = todo[start: start + self.shard_size]
                self._write_shard(chunk, choice.encode(chunk))
                bar.update(len(chunk))
        done = time.perf_counter()
        encoded = len(todo) + len(choice.probe)
        # the chosen backend's own rate: a one-off ONNX export or probe is not what it runs at
        speed = (len(todo) / max(done - probed_at, 1e-9) if todo
                 else next(row["sentences_per_second"] for row in choice.table if row["chosen"]))
        self._record_fill({"backend": choice.backend, "sentences": encoded, "seconds": round(done - started, 1),
                           "sentences_per_second": round(speed, 1), "min_cosine": choice.min_cosine,
                           "probe_sentences": len(choice.probe), "probe_seconds": round(probed_at - started, 1),
                           "probe": choice.table, "cpu": cpu_info().model})
        log.info("teacher %s encoded %d sentences in %.1f s%s: %.1f sentences/s with %s", self.teacher.name, encoded,
                 done - started, f" ({probed_at - started:.1f} s of it choosing the backend)" if choice.probe else "",
                 speed, choice.backend)
        return encoded

    def _write_shard(self, chunk: list[str], vectors: np.ndarray) -> None:
        keys = np.frombuffer(b"".join(sentence_key(s) for s in chunk), dtype=np.uint8).reshape(-1, KEY_BYTES)
        vectors = vectors.astype(np.float16)
        buffer = io.BytesIO()
        np.savez(buffer, keys=keys, vectors=vectors)
        # a random suffix: two processes filling one cache never write the same shard name
        shard = self.folder / f"shard-{len(self._shards):06d}-{uuid.uuid4().hex[:8]}.npz"
        atomic_write_bytes(shard, buffer.getvalue())
        self._shards.append(shard)
        self._add(keys, vectors)

    def _record_fill(self, record: dict) -> None:
        """Append a completed fill to ``teacher.json`` (read again: another process may have added its own)."""
        meta_path = self.folder / META_FILE
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        meta.setdefault("fills", []).append(record)
        atomic_write_json(meta_path, meta)
        self.fills.append(record)

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
