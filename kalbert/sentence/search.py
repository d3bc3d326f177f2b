"""`kalbert search`: a sentence-embedding index on disk, and exact nearest-neighbour queries on it.

An index is a folder: ``embeddings.npy`` (float16, unit length, one row per sentence),
``sentences.txt`` (one sentence per line) with ``offsets.npy`` (byte offsets, so a hit is read
without loading the corpus), and ``index.json``. Building streams the corpus twice (write the
sentences, then encode them in chunks straight into a memory-mapped array) and querying scans the
embeddings in chunks, so a million sentences fit in a few GiB. Search is exact: faiss's flat
inner-product index when faiss is installed, else sentence-transformers' ``semantic_search`` over chunks of rows.
"""

from __future__ import annotations

import json
import logging
import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm.auto import tqdm

from kalbert.data import DATASETS, iter_documents, load_nli, load_pairs, load_sts, parse_ref
from kalbert.errors import KalbertError
from kalbert.hardware import hardware_block
from kalbert.io import atomic_output_dir, atomic_write_json, open_text
from kalbert.precision import Precision, autocast, encoding_bf16
from kalbert.sentence import Backend
from kalbert.sentence.encoder import default_sentence_model, load_sentence_model, token_limit

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)
INDEX_FORMAT = "kalbert-search-index/1"
META, EMBEDDINGS, SENTENCES, OFFSETS = "index.json", "embeddings.npy", "sentences.txt", "offsets.npy"
SCAN_ROWS = 65536


@dataclass
class SearchBuildConfig:
    """What to index and how."""

    corpus: str
    """A text file with one sentence per line (.txt/.txt.gz), or a data set such as korsts:test or kowiki."""
    out: str
    """Index folder to write."""
    model: str | None = None
    """Sentence-model folder used to encode the corpus (and later the queries); None: the shipped model."""
    batch_size: int = 128
    """Sentences per encoding batch."""
    chunk_size: int = 8192
    """Sentences encoded per chunk (sorted by length within it); bounds memory during the build."""
    max_sentences: int | None = None
    """Index at most this many sentences (None: all)."""
    backend: Backend = "torch"
    """How the model runs: torch, onnx or onnx-int8 (ONNX files from ``kalbert sbert export --backend onnx``)."""
    precision: Precision = "auto"
    """auto (bf16 autocast where the CPU has native bf16, else fp32), fp32 or bf16; torch backend only."""


@dataclass(frozen=True)
class Hit:
    rank: int
    score: float
    row: int
    sentence: str


@dataclass
class QueryResult:
    """Hits per query, best first, and notes such as truncation of long queries."""

    queries: list[str]
    hits: list[list[Hit]]
    notes: list[str] = field(default_factory=list)
    backend: str = "numpy"
    model_backend: str = "torch"


def corpus_sentences(source: str) -> Iterator[str]:
    """Sentences of a file (one per line) or of a named data set (distinct sentences, in order)."""
    name = source.partition(":")[0]
    if name in DATASETS and not Path(source).exists():
        ref_name, split = parse_ref(source)
        kind = DATASETS[ref_name].kind
        if kind == "corpus":
            yield from (line for doc in iter_documents(source) for line in doc)
            return
        loaders = {"sts": (load_sts, "sentence1", "sentence2"), "pairs": (load_pairs, "sentence1", "sentence2"),
                   "nli": (load_nli, "premise", "hypothesis")}
        if kind not in loaders or split is None:
            raise KalbertError(f"cannot index '{source}'", "give a text file, a corpus, or a split like korsts:test")
        load, first, second = loaders[kind]
        seen: set[str] = set()
        for row in load(ref_name, split):
            for text in (getattr(row, first), getattr(row, second)):
                if text not in seen:
                    seen.add(text)
                    yield text
        return
    for line in open_text(source):
        line = " ".join(line.split())
        if line:
            yield line


def _write_sentences(source: str, folder: Path, limit: int | None) -> int:
    offsets = array("q", [0])
    with open(folder / SENTENCES, "wb") as handle:
        for sentence in tqdm(corpus_sentences(source), desc="reading corpus", unit=" sent"):
            handle.write(sentence.replace("\n", " ").replace("\r", " ").encode("utf-8") + b"\n")
            offsets.append(handle.tell())
            if limit and len(offsets) > limit:
                break
    np.save(folder / OFFSETS, np.frombuffer(offsets, dtype=np.int64))
    return len(offsets) - 1


def _read_rows(folder: Path, offsets: np.ndarray, start: int, stop: int) -> list[str]:
    with open(folder / SENTENCES, "rb") as handle:
        handle.seek(int(offsets[start]))
        data = handle.read(int(offsets[stop] - offsets[start]))
    return data.decode("utf-8").split("\n")[: stop - start]


def build_index(config: SearchBuildConfig, overwrite: bool = False) -> Path:
    """Encode every corpus sentence into a float16 memory-mapped matrix; return the index folder."""
    model_folder = Path(config.model or default_sentence_model())
    bf16, why = encoding_bf16(config.precision, config.backend)
    log.info("encoding in %s (%s)", "bf16" if bf16 else "fp32", why)
    model = load_sentence_model(model_folder, backend=config.backend)
    started = time.perf_counter()
    with atomic_output_dir(config.out, overwrite=overwrite) as tmp:
        count = _write_sentences(config.corpus, tmp, config.max_sentences)
        if count == 0:
            raise KalbertError(f"corpus {config.corpus} has no sentences", "give a file with one sentence per line")
        dim = model.get_embedding_dimension()
        offsets = np.load(tmp / OFFSETS)
        matrix = np.lib.format.open_memmap(tmp / EMBEDDINGS, mode="w+", dtype=np.float16, shape=(count, dim))
        with tqdm(total=count, desc="encoding", unit=" sent") as progress:
            for start in range(0, count, config.chunk_size):
                stop = min(start + config.chunk_size, count)
                with autocast("cpu", bf16):
                    vectors = model.encode(_read_rows(tmp, offsets, start, stop), batch_size=config.batch_size,
                                           convert_to_numpy=True, normalize_embeddings=True)
                matrix[start:stop] = vectors.astype(np.float16)
                progress.update(stop - start)
        matrix.flush()
        del matrix
        atomic_write_json(tmp / META, {
            "format": INDEX_FORMAT, "model": str(model_folder.resolve()), "count": count, "dim": dim,
            "dtype": "float16", "normalized": True, "max_seq_length": token_limit(model),
            "sentences_bytes": int(offsets[-1]), "build": asdict(config), "precision": "bf16" if bf16 else "fp32",
            "seconds": round(time.perf_counter() - started, 1), "hardware": hardware_block(),
        })
    return Path(config.out)


def _corrupt(folder: Path, what: str) -> KalbertError:
    return KalbertError(f"search index {folder} is corrupted: {what}",
                        "rebuild it with `kalbert search build` (the build writes it whole or not at all)")


class SearchIndex:
    """An opened index: embeddings memory-mapped, sentences read on demand, the model loaded at first query.

    Queries are encoded the way the corpus was (the build's model and backend) unless told otherwise.
    """

    def __init__(self, folder: str | Path, model: SentenceTransformer | str | None = None,
                 backend: str | None = None, precision: Precision = "auto") -> None:
        self.folder = Path(folder)
        if not (self.folder / META).is_file():
            raise KalbertError(f"{self.folder} is not a search index (no {META})",
                               "build one with `kalbert search build`")
        try:
            self.meta = json.loads((self.folder / META).read_text(encoding="utf-8"))
            count, dim = int(self.meta["count"]), int(self.meta["dim"])
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError):
            raise _corrupt(self.folder, f"{META} is unreadable") from None
        if self.meta.get("format") != INDEX_FORMAT:
            raise _corrupt(self.folder, f"unknown format {self.meta.get('format')!r}")
        try:
            # copy-on-write, never written: a writable array is what torch (semantic_search) can view without copying
            self.embeddings = np.load(self.folder / EMBEDDINGS, mmap_mode="c")
            self.offsets = np.load(self.folder / OFFSETS)
        except (OSError, ValueError, EOFError) as exc:
            raise _corrupt(self.folder, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
        if self.embeddings.shape != (count, dim) or self.embeddings.dtype != np.float16:
            raise _corrupt(self.folder, f"{EMBEDDINGS} holds {self.embeddings.shape} {self.embeddings.dtype}, "
                                        f"expected ({count}, {dim}) float16")
        sentences = self.folder / SENTENCES
        if self.offsets.shape != (count + 1,) or not sentences.is_file() or \
                sentences.stat().st_size != self.offsets[-1] or self.offsets[-1] != self.meta.get("sentences_bytes"):
            raise _corrupt(self.folder, f"{SENTENCES} does not match {OFFSETS}")
        self._model = model
        self.model_backend = backend or self.meta.get("build", {}).get("backend", "torch")
        self.bf16, _ = encoding_bf16(precision, self.model_backend)
        self._faiss = None

    def __len__(self) -> int:
        return int(self.meta["count"])

    @property
    def model(self) -> SentenceTransformer:
        if self._model is None or isinstance(self._model, str | Path):
            self._model = load_sentence_model(self._model or self.meta["model"], backend=self.model_backend)
        return self._model

    def sentence(self, row: int) -> str:
        return _read_rows(self.folder, self.offsets, row, row + 1)[0]

    def _truncation_notes(self, queries: Sequence[str]) -> list[str]:
        limit = token_limit(self.model)
        if limit is None:
            return []
        notes = []
        for i, query in enumerate(queries):
            length = len(self.model.tokenizer(query, truncation=False)["input_ids"])
            if length > limit:
                notes.append(f"query {i + 1} has {length} tokens; it was truncated to the model's "
                             f"maximum of {limit}")
        return notes

    def _scan_numpy(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` inner products, ``SCAN_ROWS`` memory-mapped rows at a time (each made float32 once for all
        queries). Dot products, not cosines: the rows are unit length already, and renormalising float16 rows
        would move scores."""
        from sentence_transformers.util import dot_score, semantic_search

        hits = semantic_search(vectors, self.embeddings, query_chunk_size=len(vectors), corpus_chunk_size=SCAN_ROWS,
                               top_k=k, score_function=dot_score)
        scores = np.array([[hit["score"] for hit in query] for query in hits], dtype=np.float32)
        return scores, np.array([[hit["corpus_id"] for hit in query] for query in hits], dtype=np.int64)

    def _scan_faiss(self, faiss, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self._faiss is None:
            self._faiss = faiss.IndexFlatIP(int(self.meta["dim"]))
            for start in range(0, len(self), SCAN_ROWS):
                self._faiss.add(np.ascontiguousarray(self.embeddings[start:start + SCAN_ROWS], dtype=np.float32))
        scores, rows = self._faiss.search(np.ascontiguousarray(vectors, dtype=np.float32), k)
        return scores, rows.astype(np.int64)

    def query(self, queries: Sequence[str], k: int = 10) -> QueryResult:
        """The ``k`` nearest sentences (cosine) of each query, best first."""
        queries = [queries] if isinstance(queries, str) else list(queries)
        if not queries or any(not q.strip() for q in queries):
            raise KalbertError("empty query", "give one or more non-empty texts")
        if k < 1:
            raise KalbertError(f"-k must be positive, got {k}")
        k = min(k, len(self))
        notes = self._truncation_notes(queries)
        with autocast("cpu", self.bf16):
            vectors = self.model.encode(queries, convert_to_numpy=True, normalize_embeddings=True)
        vectors = vectors.astype(np.float32)
        try:
            import faiss
        except ImportError:
            faiss = None
        scores, rows = self._scan_faiss(faiss, vectors, k) if faiss else self._scan_numpy(vectors, k)
        hits = [[Hit(rank, float(score), int(row), self.sentence(int(row)))
                 for rank, (score, row) in enumerate(zip(query_scores, query_rows, strict=True), start=1)]
                for query_scores, query_rows in zip(scores, rows, strict=True)]
        return QueryResult(queries, hits, notes, "faiss" if faiss else "numpy", self.model_backend)


def search_index(index: str | Path, queries: Sequence[str], k: int = 10, model: str | None = None,
                 backend: str | None = None, precision: Precision = "auto") -> QueryResult:
    """Open ``index`` and query it once (see :class:`SearchIndex` to reuse it across queries)."""
    return SearchIndex(index, model, backend, precision).query(queries, k)
