"""Ranked passages for one query, by each mode, over what a query sees: the base generation's passages and
those added since, less the deleted and replaced ones and those a metadata filter leaves out.

Rows number the base's passages from 0 and the added ones after them (Milvus: its own row keys). Dense scores
are cosines clipped to [-1, 1]; BM25 keeps only passages that share a term with the query (a score of 0 says
nothing); hybrid takes each side's best ``depth`` passages, scores every one by both, scales each side to
[0, 1] over them and ranks by ``w x cosine + (1 - w) x BM25`` (:data:`kalbert.ranking.DENSE_WEIGHT`). Rank
fusion would see only each side's order; this also sees how sure each side is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kalbert.search.base import Base
from kalbert.search.delta import Snapshot
from kalbert.search.engines import FAISS_ENGINES
from kalbert.search.filters import Filter, milvus_expression

FUSION_DEPTH = 100
"""candidates each side contributes to a hybrid ranking (more where more hits are asked for)"""


@dataclass
class Ranked:
    """One query's passages, best first: rows, the score they are ranked by, and the scores behind it."""

    rows: np.ndarray
    scores: np.ndarray
    parts: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)


def _scaled(values: np.ndarray) -> np.ndarray:
    """``values`` scaled to [0, 1] over the candidates (as :func:`kalbert.ranking.min_max_rows`); a side that
    scores every candidate alike gives each its best, 1, where that score is positive (a lone hit stays 1)."""
    values = values.astype(np.float64)
    low, high = values.min(), values.max()
    if high > low:
        return (values - low) / (high - low)
    return np.full(len(values), 1.0 if high > 0 else 0.0)


def _order(rows: np.ndarray, scores: np.ndarray, depth: int) -> np.ndarray:
    """Positions of the ``depth`` best scores, ties by the lower row."""
    return np.lexsort((rows, -scores))[:depth]


class Candidates:
    """The passages one query call may return, and their rankings."""

    def __init__(self, base: Base, snapshot: Snapshot, query_filter: Filter) -> None:
        self.base, self.snapshot, self.filter = base, snapshot, query_filter
        self.milvus = base.engine not in FAISS_ENGINES
        self.payloads: dict[int, dict[str, Any]] = {}
        """Milvus hits' passages and documents, by row"""
        allowed = None
        if query_filter:
            allowed = base.columns().allowed(query_filter)[base.document_of]
        if snapshot.base_dead is not None:
            allowed = ~snapshot.base_dead if allowed is None else allowed & ~snapshot.base_dead
        self.base_allowed = allowed
        """bool over base rows (None: every one)"""
        self.added = np.flatnonzero(snapshot.allowed(query_filter))
        """positions of the added passages allowed"""

    @property
    def available(self) -> int:
        """How many passages the query may return (Milvus: as built)."""
        base = len(self.base) if self.base_allowed is None else int(self.base_allowed.sum())
        return base + len(self.added)

    def cosines(self, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """Cosines of ``rows`` (base or added) with a query vector."""
        out = np.empty(len(rows), dtype=np.float32)
        in_base = rows < self.snapshot.base_size
        if in_base.any():
            order = np.argsort(rows[in_base])  # ascending rows: a sequential read of the memory map
            values = np.asarray(self.base.embeddings[rows[in_base][order]], dtype=np.float32) @ vector
            out[np.flatnonzero(in_base)[order]] = values
        if (~in_base).any():
            out[~in_base] = self.snapshot.vectors[rows[~in_base] - self.snapshot.base_size] @ vector
        return np.clip(out, -1.0, 1.0)

    def _added_dense(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        scores = self.snapshot.vectors[self.added] @ vector if len(self.added) else np.zeros(0, np.float32)
        return self.added + self.snapshot.base_size, scores

    def dense(self, vectors: np.ndarray, depth: int, refine: int | None = None) -> list[Ranked]:
        """The ``depth`` nearest passages of each query vector."""
        if self.milvus:
            return self._milvus_dense(vectors, depth)
        found = []
        if len(self.base):
            base_scores, base_rows = self.base.dense.search(vectors, min(depth, len(self.base)), self.base_allowed,
                                                            refine)
        else:  # a compaction after every document was deleted
            base_scores = base_rows = np.zeros((len(vectors), 0))
        for vector, scores, rows in zip(vectors, base_scores, base_rows, strict=True):
            rows, scores = np.asarray(rows, dtype=np.int64), np.asarray(scores, dtype=np.float32)
            kept = rows >= 0
            added_rows, added_scores = self._added_dense(vector)
            rows = np.concatenate([rows[kept], added_rows])
            scores = np.clip(np.concatenate([scores[kept], added_scores]), -1.0, 1.0)
            order = _order(rows, scores, depth)
            found.append(Ranked(rows[order], scores[order], {"cosine": scores[order]}))
        return found

    def _milvus_dense(self, vectors: np.ndarray, depth: int) -> list[Ranked]:
        found = []
        for hits in self.base.dense.search(vectors, depth, milvus_expression(self.filter)):
            for hit in hits:
                self.payloads[hit["row"]] = hit
            rows = np.array([hit["row"] for hit in hits], dtype=np.int64)
            scores = np.clip(np.array([hit["score"] for hit in hits], dtype=np.float32), -1.0, 1.0)
            found.append(Ranked(rows, scores, {"cosine": scores}))
        return found

    def _lexical_scores(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """Every allowed passage's BM25 score: base rows' scores (0 where not allowed) and the added ones'."""
        from kalbert.text.lexical import lexical_tokens

        bm25 = self.base.bm25
        base = bm25.score_rows([query])[0]
        if self.base_allowed is not None:
            base = np.where(self.base_allowed, base, 0.0).astype(np.float32)
        added = np.zeros(0, dtype=np.float32)
        if len(self.added):
            tokens = lexical_tokens(query)
            added = self.snapshot.bm25(tokens, bm25.document_frequencies, self.base.average_length())[self.added]
        return base, added

    def _lexical(self, query: str, depth: int) -> tuple[Ranked, np.ndarray, np.ndarray]:
        base, added = self._lexical_scores(query)
        rows = np.concatenate([np.flatnonzero(base > 0), self.added[added > 0] + self.snapshot.base_size])
        scores = np.concatenate([base[base > 0], added[added > 0]]).astype(np.float32)
        if self.milvus and len(rows):  # deletions live in Milvus: keep what is still there
            kept = np.isin(rows, list(self.base.dense.existing(rows.tolist())))
            rows, scores = rows[kept], scores[kept]
        order = _order(rows, scores, depth)
        return Ranked(rows[order], scores[order], {"bm25": scores[order]}), base, added

    def bm25(self, queries: list[str], depth: int) -> list[Ranked]:
        """The ``depth`` best passages of each query by BM25, only those sharing a term with it."""
        return [self._lexical(query, depth)[0] for query in queries]

    def hybrid(self, queries: list[str], vectors: np.ndarray, depth: int, weight: float) -> list[Ranked]:
        """Each side's ``depth`` best passages, ranked by the mix of their scaled cosine and BM25 scores."""
        found = []
        for query, vector, dense in zip(queries, vectors, self.dense(vectors, depth), strict=True):
            lexical, base, added = self._lexical(query, depth)
            rows = np.union1d(dense.rows, lexical.rows)
            cosines = self.cosines_or_hits(rows, vector, dense)
            bm25 = np.zeros(len(rows), dtype=np.float32)
            in_base = rows < self.snapshot.base_size
            bm25[in_base] = base[rows[in_base]]
            position = {row: i for i, row in enumerate(self.added + self.snapshot.base_size)}
            for i in np.flatnonzero(~in_base):
                bm25[i] = added[position[rows[i]]] if rows[i] in position else 0.0
            fused = weight * _scaled(cosines) + (1 - weight) * _scaled(bm25)
            order = _order(rows, fused, depth)
            found.append(Ranked(rows[order], fused[order],
                                {"hybrid": fused[order], "cosine": cosines[order], "bm25": bm25[order]}))
        return found

    def cosines_or_hits(self, rows: np.ndarray, vector: np.ndarray, dense: Ranked) -> np.ndarray:
        """Cosines of ``rows``: from the dense hits where they are among them (Milvus rows added since the
        build have no local vector), else from the stored vectors."""
        if not self.milvus:
            return self.cosines(rows, vector)
        known = dict(zip(dense.rows.tolist(), dense.scores.tolist(), strict=True))
        local = np.array([row for row in rows if row not in known], dtype=np.int64)
        values = dict(zip(local.tolist(), self.cosines(local, vector).tolist(), strict=True)) if len(local) else {}
        return np.array([known.get(row, values.get(row, 0.0)) for row in rows.tolist()], dtype=np.float32)
