"""Scores computed from similarities: correlations, best-threshold accuracy, zero-shot choice accuracy, and
retrieval's ranking scores.

All values are x100, as the published anchors report them. A constant similarity (a collapsed
model) has no defined correlation: the value is ``None`` rather than a misleading number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from scipy.stats import pearsonr, spearmanr

from kalbert.ranking import ranking_metrics as ranking_metrics  # retrieval's scores live below the benchmark


def _rowdot(a, b) -> np.ndarray:
    if sp.issparse(a):
        return np.asarray(a.multiply(b).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", a, b)


def paired_cosine(a, b) -> np.ndarray:
    """Cosine similarity of row i of ``a`` with row i of ``b`` (dense or sparse); zero rows give 0.

    Not ``sentence_transformers.util.pairwise_cos_sim``: it takes no scipy matrices and computes sparse rows in
    float32, which moves the TF-IDF baseline's recorded Spearman (KorSTS test 65.9118 -> 65.9119, STS-B zh
    62.3464 -> 62.3459)."""
    dot = _rowdot(a, b)
    norms = np.sqrt(_rowdot(a, a) * _rowdot(b, b))
    return np.divide(dot, norms, out=np.zeros_like(dot, dtype=np.float64), where=norms > 0)


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else 100.0 * float(value)


def spearman(scores: Sequence[float], gold: Sequence[float]) -> float | None:
    """Spearman rank correlation x100."""
    if np.ptp(np.asarray(scores, dtype=np.float64)) == 0:
        return None
    return _finite(spearmanr(scores, gold).statistic)


def pearson(scores: Sequence[float], gold: Sequence[float]) -> float | None:
    """Pearson correlation x100."""
    if np.ptp(np.asarray(scores, dtype=np.float64)) == 0:
        return None
    return _finite(pearsonr(scores, gold).statistic)


def best_threshold_accuracy(scores: Sequence[float], labels: Sequence[int]) -> tuple[float, float]:
    """The highest accuracy x100 of ``score >= t -> 1`` over all thresholds t, and that t.

    Every cut between two distinct sorted scores is tried (plus "all positive" and "all negative"),
    so ties are never split; t is the midpoint of the cut, which is what a user would deploy.
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    if s.shape != y.shape or s.size == 0:
        raise ValueError("scores and labels must be non-empty and of the same length")
    order = np.argsort(s, kind="stable")
    s, y = s[order], y[order]
    # cut k: the k lowest scores are predicted 0, the rest 1
    negatives_below = np.concatenate([[0], np.cumsum(1 - y)])
    positives_above = y.sum() - np.concatenate([[0], np.cumsum(y)])
    correct = negatives_below + positives_above
    allowed = np.ones(s.size + 1, dtype=bool)
    allowed[1:-1] = s[1:] > s[:-1]
    k = int(np.argmax(np.where(allowed, correct, -1)))
    if k == 0:
        threshold = s[0]
    elif k == s.size:
        threshold = math.nextafter(s[-1], math.inf)
    else:
        threshold = (s[k - 1] + s[k]) / 2
    return 100.0 * correct[k] / s.size, float(threshold)


def choice_accuracy(scores: Sequence[Sequence[float]], labels: Sequence[int]) -> float:
    """Accuracy x100 of picking the highest-scoring choice (first one on ties)."""
    picks = np.array([int(np.argmax(row)) for row in scores])
    return 100.0 * float(np.mean(picks == np.asarray(labels)))
