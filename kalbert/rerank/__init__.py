"""Reranking: a cross-encoder that reads a question with each candidate passage and scores how well it answers it
(`kalbert rerank train|score|export`), and the QA model's best answer span as a zero-shot baseline.

Names are imported on first use, so ``kalbert.rerank.config`` (read by the verb's --help) loads without torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "RerankTrainConfig": "config", "Reranker": "model", "QASpanScorer": "model", "load_reranker": "model",
    "check_reranker_folder": "model", "train_reranker": "train", "export_reranker": "export",
    "score_requests": "score",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'kalbert.rerank' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kalbert.rerank.{_WHERE[name]}"), name)
