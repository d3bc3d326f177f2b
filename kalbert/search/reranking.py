"""Cross-encoder reranking of search hits: a reranker (:mod:`kalbert.rerank`) reads each query beside each of
its best passages and scores them again, which ranks better than comparing two vectors and costs one model
pass per passage, so only the first ``rerank_depth`` retrieved passages are read.

"Rerank" means this; IVF-PQ's re-scoring of its candidates against the stored vectors is "refine"
(:class:`kalbert.search.engines.EngineSettings`), as faiss calls it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kalbert.errors import KalbertError
from kalbert.ranking import rerank_fusion

SHIPPED_RERANKER = Path(__file__).resolve().parents[2] / "models" / "rerank-ko-zh-small"
RERANK_DEPTH = 20
"""retrieved passages a reranker reads per query by default: the depth the shipped reranker was picked and
measured at (the cost grows with it, one model pass per passage window)"""


class Reranker(Protocol):
    """What reranking needs: higher scores for passages more relevant to the query. A trained reranker
    (:class:`kalbert.rerank.model.Reranker`), the zero-shot QA scorer, or a user's own object; one may also carry a
    ``first_stage_weight`` and a ``hybrid_score_weight`` (:func:`fused_scores`)."""

    name: str

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray: ...


def first_stage_weight(reranker: Any) -> float:
    """How much the first stage's rank counts beside ``reranker``'s scores (:func:`kalbert.ranking.rerank_fusion`):
    the weight it was chosen with, or 0 for a reranker without one (its scores alone order the passages)."""
    return float(getattr(reranker, "first_stage_weight", 0.0))


def hybrid_score_weight(reranker: Any) -> float | None:
    """How much a hybrid first stage's scores count beside ``reranker``'s (score fusion), or None where it has no
    such weight: its hybrid candidates are then fused by rank, as the others are."""
    weight = getattr(reranker, "hybrid_score_weight", None)
    return None if weight is None else float(weight)


def fused_scores(reranker: Any, scores: np.ndarray, hybrid_scores: np.ndarray | None = None) -> np.ndarray:
    """What ``reranker``'s ``scores`` of a first stage's candidates (in its order) rank by
    (:func:`kalbert.ranking.rerank_fusion`): fused with ``hybrid_scores``, the hybrid first stage's scores of the
    same candidates, by the reranker's ``hybrid_score_weight`` where both are there (on dev this ranked above rank
    fusion for hybrid candidates: benchmarks/results/rerank-ko-zh-small-selection.json), else with their
    first-stage ranks by its ``first_stage_weight``."""
    weight = hybrid_score_weight(reranker)
    if hybrid_scores is not None and weight is not None:
        return rerank_fusion(scores, weight, hybrid_scores)
    return rerank_fusion(scores, first_stage_weight(reranker))


def fusion_record(reranker: Any, hybrid: bool) -> dict[str, Any]:
    """How :func:`fused_scores` fuses ``reranker``'s scores with a first stage (a hybrid one where ``hybrid``), as
    the benchmark's records state it."""
    weight = hybrid_score_weight(reranker)
    if hybrid and weight is not None:
        return {"fusion": "score", "hybrid_score_weight": weight}
    return {"fusion": "rank", "first_stage_weight": first_stage_weight(reranker)}


def default_reranker() -> Path | None:
    """The shipped reranker's folder where this checkout has one, else None (no reranking by default)."""
    return SHIPPED_RERANKER if SHIPPED_RERANKER.is_dir() else None


def load_reranker(reranker: str | Path | Reranker) -> Reranker:
    """A reranker object as given, or loaded from its folder."""
    if hasattr(reranker, "score"):
        return reranker  # type: ignore[return-value]
    folder = Path(reranker).expanduser()
    if not folder.is_dir():
        raise KalbertError(f"reranker folder {folder} not found", "pass a reranker folder, or none for no reranking")
    try:
        from kalbert.rerank.model import load_reranker as load
    except ImportError:
        raise KalbertError("this kalbert has no cross-encoder reranking (kalbert.rerank)",
                           "drop the reranker, or update kalbert") from None
    return load(folder)


def rerank_scores(reranker: Reranker, query: str, passages: list[str]) -> np.ndarray:
    """The reranker's scores of ``passages`` for ``query``, checked to be one finite number per passage."""
    if not passages:
        return np.zeros(0, dtype=np.float32)
    scores = np.asarray(reranker.score(query, passages), dtype=np.float32).reshape(-1)
    if len(scores) != len(passages) or not np.isfinite(scores).all():
        raise RuntimeError(f"reranker {getattr(reranker, 'name', reranker)!r} gave {len(scores)} scores (finite: "
                           f"{bool(np.isfinite(scores).all())}) for {len(passages)} passages")
    return scores


def reranker_name(reranker: Any) -> str:
    return str(getattr(reranker, "name", type(reranker).__name__))
