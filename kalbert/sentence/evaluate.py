"""STS and retrieval evaluation with sentence-transformers' own evaluators, on named data splits.

STS scores are Spearman correlations (0..1) of cosine similarity with the gold scores, the number STS
papers and the KorSTS/KLUE leaderboards report. Retrieval dev scores (a QA set's val articles: each question
must find its paragraph among the val and train articles' paragraphs) are nDCG@10, MTEB's main score, so
training can pick checkpoints for question -> passage search without looking at a reported split.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kalbert.data import answer_pool, get_spec, load_qa, load_sts, parse_ref
from kalbert.data.registry import assert_selectable
from kalbert.errors import KalbertError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.evaluation import (
        EmbeddingSimilarityEvaluator,
        InformationRetrievalEvaluator,
        SentenceEvaluator,
    )


RETRIEVAL_KINDS = ("qa", "answers")
"""data set kinds whose dev splits are scored as retrieval (nDCG@10), not STS"""


def parse_sts_ref(ref: str) -> tuple[str, str]:
    """``"korsts:dev"`` -> ``("korsts", "dev")``, refusing non-STS sets and a missing split."""
    name, split = parse_ref(ref)
    spec = get_spec(name)
    if spec.kind != "sts":
        raise KalbertError(f"'{name}' is a {spec.kind} data set; evaluation needs graded STS pairs",
                           "use korsts:dev, stsb-zh:dev or cnsd-stsb:dev")
    if split is None:
        if len(spec.splits) != 1:
            raise KalbertError(f"name the split of '{name}'", f"e.g. {name}:{next(iter(spec.splits))}")
        split = next(iter(spec.splits))
    return name, split


def selection_refs(refs: str | list[str] | None, flag: str = "--eval") -> list[str]:
    """``--eval`` as ``name:split`` refs, checked before any work: STS splits that may pick a checkpoint, a
    learning rate, a soup member or a stage, so never a split the kit reports (those go to ``--test``)."""
    checked = []
    for ref in [refs] if isinstance(refs, str) else refs or []:
        name, split = parse_sts_ref(ref)
        assert_selectable(name, split, flag)
        checked.append(f"{name}:{split}")
    return checked


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


def parse_dev_ref(ref: str) -> tuple[str, str]:
    """A split that picks checkpoints: an STS split (:func:`parse_sts_ref`) or a QA or question -> answer split
    scored as retrieval; never a reported split (:func:`kalbert.data.registry.assert_selectable`)."""
    name, split = parse_ref(ref)
    if get_spec(name).kind in RETRIEVAL_KINDS:
        if split is None:
            raise KalbertError(f"name the split of '{name}'", f"e.g. {name}:val")
    else:
        name, split = parse_sts_ref(ref)
    assert_selectable(name, split)
    return name, split


def dev_refs(refs: str | list[str] | None) -> list[str]:
    """``--eval`` as ``name:split`` refs of checkpoint-picking splits (:func:`parse_dev_ref`), checked before any
    work."""
    return [":".join(parse_dev_ref(ref)) for ref in ([refs] if isinstance(refs, str) else refs or [])]


def retrieval_evaluator(ref: str, batch_size: int = 64) -> InformationRetrievalEvaluator:
    """nDCG@10 (also MRR@10, recall@10) of each question of a QA split finding its paragraph among every paragraph
    of the data set outside its reported splits (the val articles' and the train articles'), queries and
    paragraphs encoded with the model's query and document prompts (``encode_query`` / ``encode_document``).

    The train articles' paragraphs stay in as distractors because the bench ranks among every paragraph of the
    files: among its own articles' paragraphs alone a student scores near its teacher and the confusions with
    other articles, most of its gap, go unseen (docs/retrieval.md, "Choosing on val")."""
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    name, split = parse_dev_ref(ref)
    if get_spec(name).kind == "answers":
        return _answers_evaluator(name, split, batch_size)
    examples = load_qa(name, split)
    spec = get_spec(name)
    distractors = [e.context for other in spec.splits if other != split and other not in spec.eval_splits
                   for e in load_qa(name, other)]
    texts = dict.fromkeys([*(e.context for e in examples), *distractors])
    paragraphs = {context: f"p{i}" for i, context in enumerate(texts)}
    queries = {e.id: e.question for e in examples}
    relevant = {e.id: {paragraphs[e.context]} for e in examples}
    return InformationRetrievalEvaluator(
        queries, {pid: context for context, pid in paragraphs.items()}, relevant, mrr_at_k=[10], ndcg_at_k=[10],
        accuracy_at_k=[1, 10], precision_recall_at_k=[10], map_at_k=[10], batch_size=batch_size,
        name=f"{name}-{split}", write_csv=False, main_score_function="cosine")


def _answers_evaluator(name: str, split: str, batch_size: int) -> InformationRetrievalEvaluator:
    """A question -> answer split's questions against its pool (:func:`kalbert.data.answer_pool`), as the bench
    ranks them."""
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    pool = answer_pool(name, split)
    return InformationRetrievalEvaluator(
        {f"q{i}": q for i, q in enumerate(pool.questions)}, {f"a{i}": a for i, a in enumerate(pool.answers)},
        {f"q{i}": {f"a{j}" for j in ids} for i, ids in enumerate(pool.relevant)}, mrr_at_k=[10], ndcg_at_k=[10],
        accuracy_at_k=[1, 10], precision_recall_at_k=[10], map_at_k=[10], batch_size=batch_size,
        name=f"{name}-{split}", write_csv=False, main_score_function="cosine")


def dev_evaluator(ref: str, batch_size: int = 64) -> SentenceEvaluator:
    """The evaluator of a checkpoint-picking split: STS Spearman, or retrieval nDCG@10 for a QA or question ->
    answer split."""
    name, _ = parse_dev_ref(ref)
    if get_spec(name).kind in RETRIEVAL_KINDS:
        return retrieval_evaluator(ref, batch_size)
    return sts_evaluator(ref, batch_size)


def dev_metric(ref: str) -> str:
    """The name a record gives the score of a checkpoint-picking split."""
    return "ndcg_at_10" if get_spec(parse_dev_ref(ref)[0]).kind in RETRIEVAL_KINDS else "spearman_cosine"


def evaluate_dev(model: SentenceTransformer, ref: str, batch_size: int = 64) -> float:
    """The main score (:func:`dev_evaluator`) of ``model`` on a checkpoint-picking split."""
    evaluator = dev_evaluator(ref, batch_size)
    return float(evaluator(model)[evaluator.primary_metric])
