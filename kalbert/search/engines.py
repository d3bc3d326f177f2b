"""The faiss engines: exact (flat, float16), HNSW (float16 vectors) and IVF-PQ (PQ codes, refined).

Each writes one ``ENGINE.faiss`` file opened with ``IO_FLAG_MMAP``, so an index larger than RAM opens and
the page cache holds what queries touch. Vectors are unit length and scored by inner product (cosine).
IVF-PQ is trained on a sample and refines its ``refine * k`` candidates against the float16 vectors on
disk (faiss's "refine" step), so its recall is that of its candidate list, not of 8-bit codes. A search may
be limited to some rows (deleted documents left out, metadata filters): faiss skips the others while it
searches, or, where few rows are allowed, they are scored exactly by themselves.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import InitVar, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from kalbert.errors import KalbertError

Engine = Literal["auto", "exact", "hnsw", "ivfpq", "milvus"]
FAISS_ENGINES = ("exact", "hnsw", "ivfpq")
EXACT_UP_TO = 300_000
"""``auto`` picks exact search up to this many passages, HNSW above"""
ADD_ROWS = 65536
TRAIN_ROWS = 100_000
EXACT_SUBSET = 20_000
"""a search limited to at most this many rows scores them exactly instead of walking the engine"""
IVFPQ_MIN_PASSAGES = 256
"""IVF-PQ trains 256 centroids (8-bit codes) per code byte: faiss refuses fewer training vectors"""


@dataclass(frozen=True)
class EngineSettings:
    """Engine parameters; 0 picks a default from the index size."""

    hnsw_m: int = 32
    """HNSW: graph neighbours per vector (more: better recall, more memory)."""
    ef_construction: int = 400
    """HNSW: candidates kept while inserting (more: better graph, slower build). 400: at 100 the graph found
    0.878 of exact's top 10 at 10^6 passages, at 400 0.958 (benchmarks/results/search_scale{_efc100,}.md)."""
    ef_search: int = 256
    """HNSW: candidates kept while searching (more: better recall, slower queries)."""
    ivf_lists: int = 0
    """IVF-PQ: inverted lists (0: about 4 * sqrt(passages), a power of two)."""
    pq_bytes: int = 0
    """IVF-PQ: bytes per vector code, a divisor of the dimension (0: dimension / 4)."""
    nprobe: int = 0
    """IVF-PQ: lists scanned per query (0: a sixteenth of the lists, at least 64)."""
    refine: int = 10
    """IVF-PQ: candidates per hit re-scored against the float16 vectors (faiss's refine step)."""
    rerank: InitVar[int | None] = None
    """the name ``refine`` had before reranking meant cross-encoders (kalbert.rerank); deprecated"""

    def __post_init__(self, rerank: int | None) -> None:
        if rerank is not None:
            warnings.warn("EngineSettings(rerank=...) is deprecated: use refine=...", DeprecationWarning,
                          stacklevel=3)
            object.__setattr__(self, "refine", rerank)


def check_engine(engine: str, passages: int) -> None:
    """Refuse IVF-PQ over too few passages to train it, in one line rather than faiss's traceback."""
    if engine == "ivfpq" and passages < IVFPQ_MIN_PASSAGES:
        raise KalbertError(f"--engine ivfpq needs at least {IVFPQ_MIN_PASSAGES} passages to train its codes, "
                           f"and there are {passages}", "build the index with --engine exact or hnsw instead")


def pick_engine(engine: Engine, passages: int) -> str:
    """The engine for ``passages`` (checked by :func:`check_engine`)."""
    check_engine(engine, passages)
    if engine != "auto":
        return engine
    return "exact" if passages <= EXACT_UP_TO else "hnsw"


def faiss_module():
    try:
        import faiss
    except ImportError:
        raise KalbertError("faiss is not installed", "pip install faiss-cpu==1.15.1 (a kalbert dependency)") from None
    return faiss


def _ivf_shape(count: int, dim: int, settings: EngineSettings) -> tuple[int, int]:
    lists = settings.ivf_lists or max(1, min(65536, 2 ** round(math.log2(4 * math.sqrt(count)))))
    lists = min(lists, max(1, count // 39))  # faiss wants 39 training points per centroid
    pq = settings.pq_bytes or next(m for m in (dim // 4, dim // 2, dim // 3, dim) if m and dim % m == 0)
    if dim % pq:
        raise KalbertError(f"--pq-bytes {pq} does not divide the {dim} dimensions", "pick a divisor of the dimension")
    return lists, pq


def _rows(vectors: np.ndarray, start: int, stop: int) -> np.ndarray:
    return np.ascontiguousarray(vectors[start:stop], dtype=np.float32)


def build_faiss(engine: str, vectors: np.ndarray, path: Path, settings: EngineSettings) -> dict[str, Any]:
    """Build ``engine`` over float16 ``vectors`` [n, dim] into ``path``; return its parameters."""
    faiss = faiss_module()
    count, dim = vectors.shape
    ip, fp16 = faiss.METRIC_INNER_PRODUCT, faiss.ScalarQuantizer.QT_fp16
    params: dict[str, Any] = {}
    if engine == "exact":
        index = faiss.IndexScalarQuantizer(dim, fp16, ip)
    elif engine == "hnsw":
        index = faiss.IndexHNSWSQ(dim, fp16, settings.hnsw_m, ip)
        index.hnsw.efConstruction = settings.ef_construction
        params = {"m": settings.hnsw_m, "ef_construction": settings.ef_construction, "ef_search": settings.ef_search}
    elif engine == "ivfpq":
        check_engine(engine, count)
        lists, pq = _ivf_shape(count, dim, settings)
        index = faiss.IndexIVFPQ(faiss.IndexFlatIP(dim), dim, lists, pq, 8, ip)
        sample = np.sort(np.random.default_rng(0).choice(count, size=min(count, TRAIN_ROWS), replace=False))
        index.train(np.asarray(vectors[sample], dtype=np.float32))
        nprobe = min(settings.nprobe or max(64, lists // 16), lists)
        params = {"lists": lists, "pq_bytes": pq, "nprobe": nprobe, "refine": settings.refine,
                  "trained_on": len(sample)}
    else:
        raise KalbertError(f"unknown engine {engine!r}", f"use one of {', '.join(FAISS_ENGINES)} or milvus")
    for start in range(0, count, ADD_ROWS):
        index.add(_rows(vectors, start, min(start + ADD_ROWS, count)))
    faiss.write_index(index, str(path))
    return params


def refine_factor(params: dict[str, Any]) -> int:
    """An IVF-PQ index's refine factor, under its name before or after the rename."""
    return int(params.get("refine", params.get("rerank", 10)))


def _selector(faiss, allowed: np.ndarray):
    """A faiss selector of the rows where ``allowed`` (bool) is true; the bitmap it reads is kept alive beside it."""
    bits = np.packbits(allowed, bitorder="little")
    selector = faiss.IDSelectorBitmap(len(allowed), faiss.swig_ptr(bits))
    selector.bits_ref = bits
    return selector


class FaissSearcher:
    """A memory-mapped faiss index; ``vectors`` (the float16 rows) refine IVF-PQ candidates and score small
    allowed subsets exactly."""

    def __init__(self, engine: str, path: Path, params: dict[str, Any], vectors: np.ndarray) -> None:
        self.faiss = faiss = faiss_module()
        try:
            self.index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP)
        except RuntimeError as exc:
            raise KalbertError(f"search index file {path} is corrupted ({str(exc).splitlines()[0][:120]})",
                               "rebuild it with `kalbert search build`") from None
        if self.index.ntotal != len(vectors):
            raise KalbertError(f"search index file {path} holds {self.index.ntotal} vectors, not {len(vectors)}",
                               "rebuild it with `kalbert search build`")
        self.engine, self.params, self.vectors = engine, params, vectors
        if engine == "hnsw":
            self.index.hnsw.efSearch = params["ef_search"]
        elif engine == "ivfpq":
            self.index.nprobe = params["nprobe"]

    def _parameters(self, allowed: np.ndarray | None):
        """faiss search parameters limited to ``allowed`` rows, with the engine's own settings (faiss resets
        them to its defaults when parameters are given)."""
        if allowed is None:
            return None
        selector = _selector(self.faiss, allowed)
        if self.engine == "hnsw":
            return self.faiss.SearchParametersHNSW(sel=selector, efSearch=self.params["ef_search"])
        if self.engine == "ivfpq":
            return self.faiss.SearchParametersIVF(sel=selector, nprobe=self.params["nprobe"])
        return self.faiss.SearchParameters(sel=selector)

    def _exact_subset(self, queries: np.ndarray, k: int, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        found = np.full((len(queries), k), -1, dtype=np.int64)
        if len(rows):
            cosines = queries @ np.asarray(self.vectors[rows], dtype=np.float32).T
            for i, row in enumerate(cosines):
                order = np.lexsort((rows, -row))[:k]
                scores[i, : len(order)], found[i, : len(order)] = row[order], rows[order]
        return scores, found

    def search(self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None,
               refine: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` (scores, rows) of unit-length float32 ``queries``, only among ``allowed`` rows (bool, None:
        all); rows -1 where fewer were found. ``refine`` overrides an IVF-PQ index's refine factor."""
        if allowed is not None:
            subset = np.flatnonzero(allowed)
            if len(subset) <= EXACT_SUBSET:
                return self._exact_subset(queries, k, subset)
        parameters = self._parameters(allowed)
        if self.engine != "ivfpq":
            return self.index.search(queries, k, params=parameters)
        depth = min(k * (refine or refine_factor(self.params)), self.index.ntotal)
        _, candidates = self.index.search(queries, depth, params=parameters)
        scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        rows = np.full((len(queries), k), -1, dtype=np.int64)
        for i, found in enumerate(candidates):
            found = np.sort(found[found >= 0])  # ascending rows: a sequential read of the memory map
            exact = np.asarray(self.vectors[found], dtype=np.float32) @ queries[i]
            order = np.argsort(-exact)[:k]
            scores[i, : len(order)], rows[i, : len(order)] = exact[order], found[order]
        return scores, rows
