"""STS evaluation with sentence-transformers' own evaluator, on named data splits.

Scores are Spearman correlations (0..1) of cosine similarity with the gold scores,
the number STS papers and the KorSTS/KLUE leaderboards report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kalbert.data import get_spec, load_sts, parse_ref
from kalbert.errors import KalbertError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator


def parse_sts_ref(ref: str) -> tuple[str, str]:
    """``"korsts:dev"`` -> ``("korsts", "dev")``, refusing non-STS sets and a missing split."""
    name, split = parse_ref(ref)
    spec = get_spec(name)
    if spec.kind != "sts":
        raise KalbertError(f"'{name}' is a {spec.kind} data set; evaluation needs graded STS pairs",
                           "use korsts:dev, klue-sts:dev, stsb-zh:dev or cnsd-stsb:dev")
    if split is None:
        if len(spec.splits) != 1:
            raise KalbertError(f"name the split of '{name}'", f"e.g. {name}:{next(iter(spec.splits))}")
        split = next(iter(spec.splits))
    return name, split


def sts_evaluator(ref: str, batch_size: int = 64) -> EmbeddingSimilarityEvaluator:
    """An ``EmbeddingSimilarityEvaluator`` (cosine, Spearman) over the pairs of an STS split."""
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    name, split = parse_sts_ref(ref)
    pairs = load_sts(name, split)
    if not pairs:
        raise KalbertError(f"{ref} has no pairs")
    return EmbeddingSimilarityEvaluator(
        [p.sentence1 for p in pairs], [p.sentence2 for p in pairs], [p.score / 5.0 for p in pairs],
        batch_size=batch_size, main_similarity="cosine", name=f"{name}-{split}", write_csv=False,
    )


def evaluate_sts(model: SentenceTransformer, ref: str, batch_size: int = 64) -> float:
    """Spearman correlation of cosine similarity with the gold scores on ``ref`` (e.g. ``korsts:test``)."""
    evaluator = sts_evaluator(ref, batch_size)
    return float(evaluator(model)[evaluator.primary_metric])
