"""A first stage's candidates reranked: the top ``depth`` of each query reordered by a reranker's scores, the rest
left in the first stage's order, so every cut-off (recall@100 too) still reads one list.

Nothing is added to the candidates: a query whose relevant passage the first stage missed stays missed, as it
would in a search that reranks. Each query's scoring is timed, so a caller can report the reranking latency beside
the scores it reached. Checkpoint selection (:mod:`kalbert.rerank.evaluate`) and the benchmark
(:func:`kalbert.bench.retrieval.reranked_records`) both rerank this way; the reranker is anything with ``.name`` and
``.score(query, passages)``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from kalbert.errors import KalbertError
from kalbert.search.reranking import Reranker, first_stage_weight, fused_scores, hybrid_score_weight


class SharedScores:
    """A scorer that remembers each (query, passage) score, so the rankings of several first stages of one
    benchmark (cosine and its fusion with BM25 share most of their top 20) score each pair once. Its timings then
    cover only the pairs it had not seen: ``hits`` says whether a reranking reused any."""

    def __init__(self, scorer: Reranker) -> None:
        self.scorer, self.name = scorer, scorer.name
        self.first_stage_weight = first_stage_weight(scorer)
        self.hybrid_score_weight = hybrid_score_weight(scorer)
        self.scores: dict[tuple[str, str], float] = {}
        self.hits = 0

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        new = list(dict.fromkeys(p for p in passages if (query, p) not in self.scores))
        self.hits += len(passages) - len(new)
        if new:
            scores = self.scorer.score(query, new)
            self.scores.update({(query, p): float(score) for p, score in zip(new, scores, strict=True)})
        return np.array([self.scores[(query, p)] for p in passages], dtype=np.float64)


def check_depth(depth: int, available: int, what: str = "candidates") -> None:
    """One line for a depth that reranks nothing or more than there is to rerank."""
    if depth < 1:
        raise KalbertError(f"rerank depth {depth} reranks nothing", "give a depth of 1 or more, e.g. 20")
    if depth > available:
        raise KalbertError(f"rerank depth {depth} is above the {available} {what}",
                           f"give a depth of at most {available}")


@dataclass(frozen=True)
class Reranked:
    """A reranked ranking and what each query's reranking took."""

    ranking: np.ndarray
    """int64 ``[n_queries, width]``, the first ``depth`` columns reordered, -1 where the first stage padded"""
    seconds: np.ndarray
    """per query, the wall time of scoring its candidates"""

    def latency_ms(self) -> dict[str, float]:
        """p50 and p95 milliseconds per query (the reranking only, not the first stage)."""
        ms = 1000.0 * self.seconds
        if not len(ms):
            return {}
        return {"p50": round(float(np.percentile(ms, 50)), 2), "p95": round(float(np.percentile(ms, 95)), 2)}


def rerank(ranking: np.ndarray, corpus: Sequence[str], queries: Sequence[str], reranker: Reranker,
           depth: int, progress: str | None = None, hybrid_scores: np.ndarray | None = None) -> Reranked:
    """``ranking`` (corpus indices per query, best first, -1 padding) with each query's top ``depth`` candidates
    reordered by ``reranker``'s scores fused with the first stage (:func:`kalbert.search.reranking.fused_scores`:
    with ``hybrid_scores``, a hybrid first stage's scores aligned with ``ranking``, where given; else with the
    candidates' ranks), ties kept in the first stage's order; ``progress`` names a progress bar."""
    ranking = np.asarray(ranking, dtype=np.int64)
    if ranking.ndim != 2 or len(ranking) != len(queries):
        raise ValueError(f"a ranking of {len(queries)} queries must be [n_queries, width], not {ranking.shape}")
    check_depth(depth, len(corpus), "passages of the corpus")
    check_depth(depth, ranking.shape[1], "first-stage candidates per query")
    reranked = ranking.copy()
    seconds = np.zeros(len(queries))
    for q, query in enumerate(tqdm(queries, desc=progress, unit="query", disable=progress is None)):
        head = ranking[q, :depth]
        head = head[head >= 0]
        started = time.perf_counter()
        scores = reranker.score(query, [corpus[i] for i in head])
        seconds[q] = time.perf_counter() - started
        fused = fused_scores(reranker, scores, None if hybrid_scores is None else hybrid_scores[q, : len(head)])
        reranked[q, : len(head)] = head[np.argsort(-fused, kind="stable")]
    return Reranked(reranked, seconds)
