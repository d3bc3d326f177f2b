"""Detect collapsed sentence embeddings, the known failure of ALBERT in sentence-transformers.

A collapsed model maps every sentence to (nearly) the same vector: per-dimension variance goes to
zero and all pairwise cosines become the same number, so STS Spearman drops to ~0.05. Both symptoms
are measured on a fixed sample of sentences after every evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ADVICE = ("lower the learning rate (e.g. --lr 2e-5) or raise --warmup-ratio, use mean pooling and the CoSENT loss, "
          "check the checkpoint is really pretrained, or distil from a teacher first (kalbert sbert distill)")


@dataclass(frozen=True)
class CollapseReport:
    """Spread statistics of one batch of embeddings."""

    relative_std: float
    """Mean per-dimension standard deviation divided by the mean vector norm (0 when all vectors are equal)."""
    mean_cosine: float
    """Mean cosine similarity between different sentences."""
    cosine_std: float
    """Standard deviation of those cosines (near 0: every pair looks equally similar)."""
    collapsed: bool
    """True when either statistic is below its threshold."""

    def describe(self) -> str:
        state = "COLLAPSED" if self.collapsed else "healthy"
        return (f"embeddings {state}: relative std {self.relative_std:.2e}, pairwise cosine "
                f"{self.mean_cosine:.3f} ± {self.cosine_std:.2e}")


MIN_RELATIVE_STD = 1e-3
"""Below this relative per-dimension spread the vectors are (nearly) one vector."""
MIN_COSINE_STD = 1e-3
"""Below this spread of pairwise cosines every pair looks equally similar: no ranking is left to score."""


def cosines_collapsed(cosines: np.ndarray) -> bool:
    """The collapse criterion on pair cosines alone (what a benchmark has), the one :func:`check_collapse` uses."""
    return float(np.std(cosines)) < MIN_COSINE_STD


def check_collapse(embeddings: np.ndarray, min_relative_std: float = MIN_RELATIVE_STD,
                   min_cosine_std: float = MIN_COSINE_STD, max_pairs_sample: int = 512) -> CollapseReport:
    """Measure the spread of ``embeddings`` ([n, dim], n >= 2) and call it collapsed below the thresholds."""
    from sentence_transformers.util import cos_sim

    vectors = np.asarray(embeddings, dtype=np.float64)[:max_pairs_sample]
    if vectors.ndim != 2 or len(vectors) < 2:
        raise ValueError("check_collapse needs at least two embeddings")
    norms = np.linalg.norm(vectors, axis=1)
    relative_std = float(vectors.std(axis=0).mean() / max(norms.mean(), 1e-12))
    cosines = cos_sim(vectors, vectors).numpy()[np.triu_indices(len(vectors), k=1)]
    mean_cosine, cosine_std = float(cosines.mean()), float(cosines.std())
    collapsed = relative_std < min_relative_std or cosine_std < min_cosine_std
    return CollapseReport(relative_std, mean_cosine, cosine_std, collapsed)
