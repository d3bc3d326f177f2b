"""STS dev scores of a static model, computed by sentence-transformers on the model as its folder loads,
so the number recorded is the number a user reproduces with ``SentenceTransformer(path)``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kalbert.sentence.evaluate import selection_refs, sts_evaluator

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_EVAL = {"ko": "korsts:dev", "zh": "stsb-zh:dev"}
"""The dev split each language is scored on unless ``--eval`` names others (never a reported test split)."""


def eval_refs(given: list[str] | None, languages: list[str]) -> list[str]:
    """``--eval`` as ``name:split`` refs (checked now, before any work), default: one dev split per language."""
    refs = given if given is not None else [DEFAULT_EVAL[lang] for lang in languages if lang in DEFAULT_EVAL]
    return selection_refs(refs)


class STSDev:
    """Spearman (cosine) on each named STS split; :meth:`__call__` returns ``{ref: score}``."""

    def __init__(self, refs: list[str], batch_size: int = 256) -> None:
        self.evaluators = {ref: sts_evaluator(ref, batch_size) for ref in refs}

    def __call__(self, model: SentenceTransformer) -> dict[str, float]:
        return {ref: float(evaluator(model)[evaluator.primary_metric]) for ref, evaluator in self.evaluators.items()}
