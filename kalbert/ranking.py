"""Rankings from scores, rankings merged and rankings scored: exact top-k, reciprocal rank fusion, the convex
combination of normalised scores, a reranker's scores kept near the first stage's order, and MTEB's retrieval
scores of a ranking (below the benchmark, which reports them, and the training verbs that pick checkpoints by
them).

All order equal scores by the lower index, so a ranking is a function of the scores alone (never of a
partial sort's internals) and a benchmark rerun gives the same numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DENSE_WEIGHT = 0.3
"""the cosine's share of a hybrid search score by default (BM25 has the rest; :func:`convex_fusion`). On the QA
sets' val questions 0.3 is at or near the best weight for every kalbert model and under BM25 alone only on DRCD,
by at most 0.25 nDCG@10 (the convex rows' val scores in benchmarks/results/*-retrieval.json; docs/retrieval.md)."""


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` highest columns of each row of ``scores`` ``[n, m]``, best first, ties by lower column:
    indices int64 ``[n, min(k, m)]`` and their scores (the input's dtype)."""
    n, m = scores.shape
    k = max(0, min(k, m))
    indices = np.empty((n, k), dtype=np.int64)
    for i, row in enumerate(scores):
        if k < m:  # every column scoring at least the k-th best, so ties at the cut are all considered
            candidates = np.flatnonzero(row >= np.partition(row, m - k)[m - k])
        else:
            candidates = np.arange(m)
        indices[i] = candidates[np.lexsort((candidates, -row[candidates]))][:k]
    return indices, np.take_along_axis(scores, indices, axis=1)


def reciprocal_rank_fusion(rankings: list[np.ndarray], weights: Sequence[float] | None = None, k: int = 60,
                           top: int = 100) -> np.ndarray:
    """Merge rankings of the same queries by reciprocal rank fusion (Cormack et al. 2009).

    ``rankings``: one ``[n_queries, depth]`` array of item indices per system, best first (-1 pads a short
    list). An item at 1-based rank r of system i scores ``weights[i] / (k + r)`` (weights default to 1),
    summed over systems; an item a system did not return gets nothing from it. Returns the ``top`` best
    items per query, int64 ``[n_queries, top]``, ties by lower index, padded with -1 where fewer items
    were returned.
    """
    if not rankings:
        raise ValueError("reciprocal_rank_fusion needs at least one ranking")
    weights = [1.0] * len(rankings) if weights is None else list(weights)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    n_queries = len(rankings[0])
    if any(len(ranking) != n_queries for ranking in rankings):
        raise ValueError("the rankings cover different numbers of queries")
    gains = [weight / (k + np.arange(1, ranking.shape[1] + 1, dtype=np.float64))
             for weight, ranking in zip(weights, rankings, strict=True)]
    fused = np.full((n_queries, top), -1, dtype=np.int64)
    for q in range(n_queries):
        items = np.concatenate([ranking[q] for ranking in rankings]).astype(np.int64)
        gain = np.concatenate(gains)
        kept = items >= 0
        unique, inverse = np.unique(items[kept], return_inverse=True)
        scores = np.bincount(inverse, weights=gain[kept], minlength=len(unique))
        best = unique[np.lexsort((unique, -scores))][:top]
        fused[q, : len(best)] = best
    return fused


def min_max_rows(scores: np.ndarray) -> np.ndarray:
    """Each row of ``scores`` scaled to [0, 1] by its own minimum and maximum (a constant row becomes 0), float64."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape[1] == 0:
        return scores
    low = scores.min(axis=1, keepdims=True)
    span = scores.max(axis=1, keepdims=True) - low
    return np.divide(scores - low, span, out=np.zeros_like(scores), where=span > 0)


def convex_scores(scores: list[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """Systems' full score matrices (``[n_queries, n_items]`` each, higher is better) merged into one: the weighted
    sum of their per-query min-max normalised scores, float64."""
    if not scores or len(weights) != len(scores):
        raise ValueError(f"{len(weights)} weights for {len(scores)} score matrices")
    if any(matrix.shape != scores[0].shape for matrix in scores):
        raise ValueError("the score matrices differ in shape")
    return sum(weight * min_max_rows(matrix) for weight, matrix in zip(weights, scores, strict=True))


def convex_fusion(scores: list[np.ndarray], weights: Sequence[float], top: int = 100) -> np.ndarray:
    """Merge systems' full score matrices by :func:`convex_scores`. Unlike reciprocal rank fusion this keeps how far
    apart a system puts its items, not only their order; tuned on held-out queries it ranks better (Bruch et al.,
    "An Analysis of Fusion Functions for Hybrid Retrieval", 2023). Returns the ``top`` best items per query,
    int64, ties by the lower index."""
    return top_k(convex_scores(scores, weights), top)[0]


def _standardised(values: np.ndarray) -> np.ndarray:
    return (values - values.mean()) / (values.std() + 1e-6)


def rerank_fusion(scores: np.ndarray, first_stage_weight: float,
                  first_stage_scores: np.ndarray | None = None) -> np.ndarray:
    """A reranker's scores of one query's candidates, given in the first stage's order, as they rank: standardised
    over the candidates, minus ``first_stage_weight`` x ln(1 + first-stage rank) (rank fusion), or, given the
    candidates' ``first_stage_scores``, plus ``first_stage_weight`` x those scores standardised the same way (score
    fusion: it keeps how far apart the first stage puts them). A reranker that is sure (a wide gap) reorders
    freely; where it barely separates two passages, the first stage's order stands. 0: its raw scores, unchanged."""
    scores = np.asarray(scores, dtype=np.float64)
    if not first_stage_weight or not len(scores):
        return scores
    if first_stage_scores is None:
        return _standardised(scores) - first_stage_weight * np.log1p(np.arange(len(scores)))
    first = np.asarray(first_stage_scores, dtype=np.float64)
    if first.shape != scores.shape:
        raise ValueError(f"{len(first)} first-stage scores for {len(scores)} reranked candidates")
    return _standardised(scores) + first_stage_weight * _standardised(first)


def ranking_metrics(ranked: np.ndarray, gold: np.ndarray | Sequence[Sequence[int]]) -> dict[str, float]:
    """MTEB's retrieval scores x100; ``ranked[q]`` lists the retrieved items best first (at least 100 of them, or the
    whole corpus), ``gold[q]`` is the query's one relevant item (an int array) or its relevant items (a list each).

    With one relevant item at 1-based rank r: nDCG@10 = 1/log2(r + 1), MRR@10 = 1/r, recall@k = [r <= k]
    (0 when r > the cut-off), each averaged over queries. With several: MRR@10 from the first relevant item,
    nDCG@10 against the ideal ordering of min(10, relevant) items, recall@k the share of them found.
    """
    ranked = np.asarray(ranked)
    if isinstance(gold, np.ndarray) and gold.ndim == 1:
        gold = [[int(g)] for g in gold]
    hits = np.array([np.isin(row, list(items)) for row, items in zip(ranked, gold, strict=True)], dtype=bool
                    ).reshape(ranked.shape)
    n_relevant = np.array([len(items) for items in gold], dtype=np.float64)
    first = np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, np.iinfo(np.int64).max).astype(np.float64)
    discount = 1.0 / np.log2(np.arange(2, 12, dtype=np.float64))
    top10 = hits[:, :10].astype(np.float64)
    dcg = top10 @ discount[: top10.shape[1]]
    ideal = np.array([discount[: int(min(10, n))].sum() for n in n_relevant])
    recall = {k: hits[:, :k].sum(axis=1) / n_relevant for k in (1, 10, 100)}
    return {
        "ndcg_at_10": 100.0 * float(np.mean(dcg / ideal)),
        "mrr_at_10": 100.0 * float(np.mean(np.where(first <= 10, 1.0 / first, 0.0))),
        "recall_at_1": 100.0 * float(np.mean(recall[1])),
        "recall_at_10": 100.0 * float(np.mean(recall[10])),
        "recall_at_100": 100.0 * float(np.mean(recall[100])),
    }
