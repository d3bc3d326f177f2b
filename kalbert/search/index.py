"""An opened search index and its queries: dense (an engine), BM25, or both fused by their normalised scores.

Queries are encoded by the model that built the index, with its ``query`` prompt; another model or prompt
is refused before encoding (its vectors would live in another space). Dense scores are cosines clipped to
[-1, 1] (float16 rows are unit length only to about 1e-3); BM25 hits carry BM25 scores, and fused hits
the cosine of the passage, so every mode's score means something on its own.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from kalbert.artifact import Kind, read_meta
from kalbert.errors import KalbertError
from kalbert.precision import Precision, autocast, encoding_bf16
from kalbert.ranking import DENSE_WEIGHT, convex_fusion, top_k
from kalbert.search.build import EMBEDDINGS, INDEX_FORMAT, LEXICAL
from kalbert.search.engines import FAISS_ENGINES
from kalbert.search.model import check_identity, check_model, check_query_side, model_prompts
from kalbert.search.store import PassageStore
from kalbert.sentence.encoder import load_sentence_model, token_limit

Mode = Literal["dense", "bm25", "hybrid"]
MODES: tuple[str, ...] = ("dense", "bm25", "hybrid")
FUSION_DEPTH = 100
"""candidates each side contributes to a hybrid ranking"""


@dataclass(frozen=True)
class Hit:
    """One passage found for a query."""

    rank: int
    score: float
    row: int
    """passage row in the index"""
    document: str
    """the id of the document the passage comes from"""
    passage: str
    start: int
    """character offset of the passage in its document's text"""
    end: int
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def sentence(self) -> str:
        """The passage, under the name it had when indexes held sentences (demo, notebooks)."""
        return self.passage


@dataclass
class QueryResult:
    """Hits per query, best first, with notes (such as truncated queries) and where the time went."""

    queries: list[str]
    hits: list[list[Hit]]
    notes: list[str] = field(default_factory=list)
    mode: str = "dense"
    engine: str = "exact"
    model_backend: str = "torch"
    encode_seconds: float = 0.0
    """encoding the queries"""
    search_seconds: float = 0.0
    """finding the hits once encoded"""


def _corrupt(folder: Path, what: str) -> KalbertError:
    return KalbertError(f"search index {folder} is corrupted: {what}",
                        "rebuild it with `kalbert search build` (the build writes it whole or not at all)")


class Index:
    """An index folder opened for queries: the engine memory-mapped, passages read on demand, the model
    loaded at the first query."""

    def __init__(self, folder: str | Path, model: str | Path | None = None, backend: str | None = None,
                 precision: Precision = "auto") -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise KalbertError(f"search index {self.folder} not found", "build one with `kalbert search build`")
        try:
            self.record = read_meta(self.folder, expect=Kind.SEARCH_INDEX)
        except KalbertError as exc:
            raise KalbertError(f"{self.folder} is not a search index ({exc.message})",
                               "build one with `kalbert search build`") from None
        if self.record.get("format") != INDEX_FORMAT:
            raise _corrupt(self.folder, f"unknown format {self.record.get('format')!r}")
        self.engine = self.record["engine"]
        self.store = PassageStore(self.folder)
        try:
            self.embeddings = np.load(self.folder / EMBEDDINGS, mmap_mode="r")
        except (OSError, ValueError, EOFError) as exc:
            raise _corrupt(self.folder, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
        if self.embeddings.shape != (len(self.store), self.record["dim"]):
            raise _corrupt(self.folder, f"{EMBEDDINGS} holds {self.embeddings.shape}, expected "
                                        f"({len(self.store)}, {self.record['dim']})")
        self._model_path = Path(model) if model else Path(self.record["model"]["path"])
        self.model_backend = backend or self.record["config"]["backend"]
        self.bf16, _ = encoding_bf16(precision, self.model_backend)
        self._model = None
        self._dense = None
        self._bm25 = None

    def __len__(self) -> int:
        return len(self.store)

    @property
    def model(self):
        if self._model is None:
            check_identity(self.record, check_model(self._model_path))
            model = load_sentence_model(self._model_path, backend=self.model_backend)
            check_query_side(self.record, model)
            self._model = model
        return self._model

    @property
    def dense(self):
        """The engine's searcher, opened at the first dense query."""
        if self._dense is None:
            params = self.record["engine_params"]
            if self.engine in FAISS_ENGINES:
                from kalbert.search.engines import FaissSearcher

                self._dense = FaissSearcher(self.engine, self.folder / f"{self.engine}.faiss", params,
                                            self.embeddings)
            else:
                from kalbert.search.milvus import MilvusSearcher

                self._dense = MilvusSearcher(params["uri"], params["collection"])
        return self._dense

    @property
    def bm25(self):
        if self._bm25 is None:
            if self.record["lexical"] != "bm25":
                raise KalbertError(f"{self.folder} has no BM25 index", "rebuild it with --lexical bm25")
            from kalbert.text.lexical import BM25Index

            self._bm25 = BM25Index.load(self.folder / LEXICAL)
        return self._bm25

    def hit(self, rank: int, score: float, row: int) -> Hit:
        text, document, start, end = self.store.passage(row)
        return Hit(rank, score, row, document["id"], text, start, end, document["metadata"])

    def _truncation_notes(self, queries: Sequence[str]) -> list[str]:
        limit = token_limit(self.model)
        if limit is None:
            return []
        notes = []
        for i, query in enumerate(queries):
            length = len(self.model.tokenizer(query, truncation=False)["input_ids"])
            if length > limit:
                notes.append(f"query {i + 1} has {length} tokens; it was truncated to the model's maximum of {limit}")
        return notes

    def encode(self, queries: Sequence[str]) -> np.ndarray:
        """Unit-length float32 query vectors, encoded with the model's ``query`` prompt."""
        with autocast("cpu", self.bf16):
            vectors = self.model.encode(list(queries), prompt_name=model_prompts(self.model).query_name,
                                        convert_to_numpy=True, normalize_embeddings=True)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def search_vectors(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` (cosines clipped to [-1, 1], rows) of encoded queries, from a faiss engine."""
        scores, rows = self.dense.search(vectors, min(k, len(self)))
        return np.clip(scores, -1.0, 1.0), rows

    def _dense_hits(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        if self.engine not in FAISS_ENGINES:
            return [[Hit(rank, float(np.clip(h["score"], -1, 1)), h["row"], h["document"], h["passage"], h["start"],
                         h["end"], h["metadata"] or {}) for rank, h in enumerate(hits, start=1)]
                    for hits in self.dense.search(vectors, min(k, len(self)))]
        scores, rows = self.search_vectors(vectors, k)
        return [[self.hit(rank, float(s), int(r)) for rank, (s, r) in enumerate(zip(qs, qr, strict=True), start=1)
                 if r >= 0] for qs, qr in zip(scores, rows, strict=True)]

    def query(self, queries: str | Sequence[str], k: int = 10, mode: Mode | None = None,
              dense_weight: float = DENSE_WEIGHT) -> QueryResult:
        """The ``k`` best passages of each query; ``mode`` defaults to hybrid where the index has BM25, whose
        score is ``dense_weight`` x cosine + the rest x BM25, each normalised over the candidates."""
        queries = [queries] if isinstance(queries, str) else list(queries)
        if not queries or any(not q.strip() for q in queries):
            raise KalbertError("empty query", "give one or more non-empty texts")
        if k < 1:
            raise KalbertError(f"-k must be positive, got {k}")
        mode = mode or ("hybrid" if self.record["lexical"] == "bm25" else "dense")
        if mode not in MODES:
            raise KalbertError(f"unknown mode {mode!r}", f"use one of {', '.join(MODES)}")
        if not 0.0 <= dense_weight <= 1.0:
            raise KalbertError(f"--dense-weight must be between 0 and 1, got {dense_weight}",
                               f"e.g. --dense-weight {DENSE_WEIGHT} (0: BM25's order, 1: the cosine's)")
        if mode != "dense":
            self.bm25  # noqa: B018 - refuse an index without BM25 before encoding anything
        notes, vectors, encode_seconds = [], None, 0.0
        if mode != "bm25":
            notes = self._truncation_notes(queries)
            started = time.perf_counter()
            vectors = self.encode(queries)
            encode_seconds = time.perf_counter() - started
        started = time.perf_counter()
        if mode == "dense":
            hits = self._dense_hits(vectors, k)
        elif mode == "bm25":
            rows, scores = self.bm25.search(queries, k)
            hits = [[self.hit(rank, float(s), int(r)) for rank, (r, s) in enumerate(zip(qr, qs, strict=True), 1)]
                    for qr, qs in zip(rows, scores, strict=True)]
        else:
            hits = self._hybrid(queries, vectors, k, dense_weight)
        return QueryResult(queries, hits, notes, mode, self.engine, self.model_backend, encode_seconds,
                           time.perf_counter() - started)

    def _hybrid(self, queries: list[str], vectors: np.ndarray, k: int, dense_weight: float) -> list[list[Hit]]:
        """Each side's :data:`FUSION_DEPTH` best passages, every candidate scored by both (its cosine from the stored
        vectors, its BM25 score), each side min-max normalised over the candidates and mixed ``dense_weight`` :
        1 - ``dense_weight`` (:func:`kalbert.ranking.convex_fusion`). Rank fusion would see only each side's order;
        this also sees how sure each side is."""
        depth = min(FUSION_DEPTH, len(self))
        hits = []
        for vector, query, dense in zip(vectors, queries, self._dense_hits(vectors, depth), strict=True):
            bm25 = self.bm25.score_rows([query])
            candidates = np.union1d([hit.row for hit in dense], top_k(bm25, depth)[0][0])
            cosines = np.asarray(self.embeddings[candidates], dtype=np.float32) @ vector
            order = convex_fusion([cosines[None, :], bm25[:, candidates]], [dense_weight, 1.0 - dense_weight],
                                  top=min(k, len(candidates)))[0]
            hits.append([self.hit(rank, float(np.clip(cosines[i], -1.0, 1.0)), int(candidates[i]))
                         for rank, i in enumerate(order, start=1)])
        return hits


def open_index(folder: str | Path, model: str | Path | None = None, backend: str | None = None,
               precision: Precision = "auto") -> Index:
    """Open an index folder for queries (see :class:`Index`)."""
    return Index(folder, model, backend, precision)


def search_index(index: str | Path, queries: str | Sequence[str], k: int = 10, model: str | None = None,
                 backend: str | None = None, precision: Precision = "auto", mode: Mode | None = None,
                 dense_weight: float = DENSE_WEIGHT) -> QueryResult:
    """Open ``index`` and query it once (keep an :class:`Index` to query it again)."""
    return Index(index, model, backend, precision).query(queries, k, mode, dense_weight)
