"""Picking a reranker's checkpoint: nDCG@10 of the first stage's top-K reranked, on val articles and dev carves.

A QA set's val questions are ranked among the val and train articles' paragraphs (the sentence models' choice,
:mod:`kalbert.sentence.evaluate`: the train articles stay in as distractors, as the benchmark ranks among every
paragraph); a question -> answer set's dev questions among its answer pool (:func:`kalbert.data.answer_pool`, the
benchmark's). The first stage ranks once per run (BM25 over the texts as the retrieval benchmark's BM25 reads them,
or a dense model by cosine with its prompts); each evaluation reranks its top ``depth`` and scores the list with
MTEB's metrics (:func:`kalbert.ranking.ranking_metrics`). A seeded sample of ``max_rows`` questions per split,
fixed for the run, keeps an evaluation within minutes on a small CPU.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import numpy as np

from kalbert.data import answer_pool, get_spec, load_qa, parse_ref
from kalbert.data.registry import assert_selectable
from kalbert.data.script import reads_simplified, to_simplified
from kalbert.errors import KalbertError
from kalbert.ranking import ranking_metrics, top_k
from kalbert.rerank.candidates import check_depth, rerank
from kalbert.rerank.config import BM25
from kalbert.rerank.rows import KINDS, LEXICAL_LANGUAGES
from kalbert.search.reranking import Reranker

TOP = 100
"""first-stage candidates kept per question: the deepest cut-off scored (recall@100)"""
MAIN_SCORE = "ndcg_at_10"


@dataclass(frozen=True)
class EvalSet:
    """One evaluation split: its (sampled) questions, the passages they are ranked among, and the first stage's
    ranking of them."""

    ref: str
    queries: list[str]
    corpus: list[str]
    gold: list[list[int]]
    """per question, the corpus indices of its relevant passages"""
    ranking: np.ndarray
    """the first stage's best ``TOP`` corpus indices per question"""
    questions: int
    """questions of the split before sampling"""

    def first_stage_scores(self) -> dict[str, float]:
        return ranking_metrics(self.ranking, self.gold)


def eval_ref(ref: str) -> tuple[str, str]:
    """A checkpoint-picking split of a QA or question -> answer set, named with its split, never a reported one."""
    name, split = parse_ref(ref)
    kind = get_spec(name).kind
    if kind not in KINDS:
        raise KalbertError(f"'{name}' is a {kind} data set; a reranker is picked on QA or question -> answer sets",
                           "e.g. korquad:val, answers-ko:dev")
    if split is None:
        raise KalbertError(f"name the split of '{name}'", f"e.g. {name}:{'val' if kind == 'qa' else 'dev'}")
    if split == "train":
        raise KalbertError(f"{name}:train is training data; a reranker is picked on held-out questions",
                           f"use {name}:{'val' if kind == 'qa' else 'dev'}")
    assert_selectable(name, split)
    return name, split


def _split_texts(name: str, split: str) -> tuple[list[str], list[str], list[list[int]]]:
    """(questions, passages, relevant passage indices per question) of one evaluation split."""
    spec = get_spec(name)
    if spec.kind == "answers":
        pool = answer_pool(name, split)
        return pool.questions, pool.answers, pool.relevant
    examples = load_qa(name, split)
    distractors = [e.context for other in spec.splits if other not in (split, *spec.eval_splits)
                   for e in load_qa(name, other)]
    corpus = list(dict.fromkeys([*(e.context for e in examples), *distractors]))
    place = {text: i for i, text in enumerate(corpus)}
    return [e.question for e in examples], corpus, [[place[e.context]] for e in examples]


def first_stage_ranking(first_stage: str, name: str, queries: list[str], corpus: list[str]) -> np.ndarray:
    """The best ``TOP`` corpus indices per question by BM25 or by a dense model's cosine."""
    top = min(TOP, len(corpus))
    if first_stage == BM25:
        from kalbert.text.lexical import BM25Index

        read = to_simplified if reads_simplified(name, LEXICAL_LANGUAGES) else str
        return BM25Index.build([read(text) for text in corpus]).search([read(q) for q in queries], top)[0]
    from kalbert.teachers.encoders import RoleEncoder, dense_vectors, load_teacher_encoder

    encoder = load_teacher_encoder(first_stage)
    lang = get_spec(name).lang
    passages = dense_vectors(RoleEncoder(encoder, "passage", lang), corpus)
    return top_k(dense_vectors(RoleEncoder(encoder, "query", lang), queries) @ passages.T, top)[0]


def load_eval_set(ref: str, first_stage: str, depth: int, max_rows: int | None, seed: int) -> EvalSet:
    """An evaluation split (:func:`eval_ref`) with its first stage ranked; a depth above its corpus is refused."""
    name, split = eval_ref(ref)
    queries, corpus, gold = _split_texts(name, split)
    check_depth(depth, len(corpus), f"passages of {name}:{split}")
    n_split, keep = len(queries), list(range(len(queries)))
    if max_rows is not None and max_rows < len(keep):
        keep = sorted(random.Random(f"{seed}/{name}:{split}").sample(keep, max_rows))
    queries, gold_kept = [queries[i] for i in keep], [gold[i] for i in keep]
    ranking = first_stage_ranking(first_stage, name, queries, corpus)
    return EvalSet(f"{name}:{split}", queries, corpus, gold_kept, ranking, n_split)


def evaluate_sets(reranker: Reranker, sets: list[EvalSet], depth: int) -> tuple[float, dict[str, float]]:
    """The mean nDCG@10 of ``sets`` reranked at ``depth``, and each split's nDCG@10, MRR@10 and ms per question."""
    metrics: dict[str, float] = {}
    for evaluation in sets:
        started = time.perf_counter()
        reranked = rerank(evaluation.ranking, evaluation.corpus, evaluation.queries, reranker, depth,
                          progress=f"reranking {evaluation.ref}")
        scores = ranking_metrics(reranked.ranking, evaluation.gold)
        metrics[f"{evaluation.ref}_{MAIN_SCORE}"] = round(scores[MAIN_SCORE], 4)
        metrics[f"{evaluation.ref}_mrr_at_10"] = round(scores["mrr_at_10"], 4)
        metrics[f"{evaluation.ref}_ms_per_query"] = round(
            1000 * (time.perf_counter() - started) / max(1, len(evaluation.queries)), 1)
    mean = float(np.mean([metrics[f"{e.ref}_{MAIN_SCORE}"] for e in sets]))
    return mean, {f"mean_{MAIN_SCORE}": round(mean, 4), **metrics}
