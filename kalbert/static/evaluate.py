"""Dev scores of a static model, computed by sentence-transformers on the model as its folder loads, so the
number recorded is the number a user reproduces with ``SentenceTransformer(path)``: STS Spearman, or nDCG@10
of a QA set's val questions finding their paragraphs (:mod:`kalbert.sentence.evaluate`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kalbert.sentence.evaluate import dev_evaluator, dev_refs

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_EVAL = {"ko": "korsts:dev", "zh": "stsb-zh:dev"}
"""The dev split each language is scored on unless ``--eval`` names others (never a reported test split)."""


def eval_refs(given: list[str] | None, languages: list[str]) -> list[str]:
    """``--eval`` as ``name:split`` refs (checked now, before any work), default: one dev split per language."""
    return dev_refs(given if given is not None else [DEFAULT_EVAL[lang] for lang in languages if lang in DEFAULT_EVAL])


class DevScores:
    """The main score of each named dev split; :meth:`__call__` returns ``{ref: score}``."""

    def __init__(self, refs: list[str], batch_size: int = 256) -> None:
        self.evaluators = {ref: dev_evaluator(ref, batch_size) for ref in refs}

    def __call__(self, model: SentenceTransformer) -> dict[str, float]:
        return {ref: float(evaluator(model)[evaluator.primary_metric]) for ref, evaluator in self.evaluators.items()}
