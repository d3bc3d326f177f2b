"""Training rows of a reranker: each question with its positive and hard negatives, from train splits only.

A QA set's train articles give each question against its paragraph; a question -> answer set's train carve gives
each question against its answer. Negatives come from the same set's train split alone (its other paragraphs, or
its other answers), so no val or test article and no dev or test question is ever read: BM25 ranks the split for
each question (Traditional Chinese converted to Simplified first, as the retrieval benchmark's BM25 reads it), and
a dense model, when given, ranks it by cosine with its prompts, passing over anything it scores at or above
``margin`` x the question's own passage (most likely another answer: NV-Retriever's positive-aware rule, as the
sentence models' teacher-mined negatives apply it). A question's negatives are drawn at random (seeded) from the
miners' ``depth`` best other passages, never the question's own passage or another answer to the same question,
and topped up with random passages of the split where the miners offer too few. A QA question can also take some
of its negatives from its own article's other paragraphs: the passages a reranker most often ranks above the gold.
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kalbert.data import get_spec, load_answers, load_qa, parse_ref
from kalbert.data.registry import question_key
from kalbert.data.script import reads_simplified, to_simplified
from kalbert.errors import KalbertError
from kalbert.ranking import top_k

log = logging.getLogger(__name__)
KINDS = ("qa", "answers")
"""the data set kinds a reranker trains and is evaluated on"""
LEXICAL_LANGUAGES = ["ko", "zh"]
"""what BM25 reads like (jieba's dictionary is Simplified), as in the retrieval benchmark"""
BLOCK = 256
"""questions scored against the whole split at once by the dense miner"""


@dataclass(frozen=True)
class RerankRow:
    query: str
    positive: str
    negatives: tuple[str, ...]


@dataclass(frozen=True)
class Questions:
    """One train split as questions against a pool of passages."""

    queries: list[str]
    positives: list[int]
    """each question's passage, as an index into ``pool``"""
    own: list[frozenset[int]]
    """each question's relevant passages (its own answers, or its paragraph), never its negatives"""
    pool: list[str]
    """every distinct passage of the split: where negatives come from"""
    siblings: list[tuple[int, ...]]
    """each question's article's other paragraphs, as indices into ``pool`` (none for an answer set)"""


@dataclass
class TrainSet:
    """A training set's rows and how they were made, for the model's record."""

    ref: str
    lang: str
    rows: list[RerankRow]
    questions: int
    """questions of the split before ``max_rows``"""
    pool: int
    miners: list[str]
    topped_up: int = 0
    """rows whose miners offered fewer than the negatives wanted (random passages of the split filled in)"""
    skipped: int = 0
    """dense-miner candidates passed over as likely answers, summed over the rows"""
    from_article: int = 0
    """negatives drawn from the question's own article's other paragraphs, summed over the rows"""

    def record(self) -> dict:
        return {"data": self.ref, "rows": len(self.rows), "questions": self.questions, "pool": self.pool,
                "miners": self.miners, "topped_up": self.topped_up, "skipped_as_likely_answers": self.skipped,
                "negatives_from_article": self.from_article}


def train_ref(ref: str) -> tuple[str, str]:
    """A training set as (name, "train"): a QA or question -> answer set at its train split, nothing else."""
    name, split = parse_ref(ref)
    kind = get_spec(name).kind
    if kind not in KINDS:
        raise KalbertError(f"'{name}' is a {kind} data set; a reranker trains on QA or question -> answer sets",
                           "e.g. korquad:train, answers-zh:train")
    if split not in (None, "train"):
        raise KalbertError(f"{name}:{split} is not a train split; a reranker trains on train splits only",
                           f"use {name}:train")
    return name, "train"


def load_questions(name: str) -> Questions:
    """A QA set's train articles (question -> its paragraph) or an answer set's train carve (question -> answer)."""
    if get_spec(name).kind == "qa":
        examples = load_qa(name, "train")
        pool = list(dict.fromkeys(e.context for e in examples))
        place = {text: i for i, text in enumerate(pool)}
        positives = [place[e.context] for e in examples]
        articles: dict[str, dict[int, None]] = defaultdict(dict)
        for e, p in zip(examples, positives, strict=True):
            articles[e.title][p] = None
        siblings = [tuple(i for i in articles[e.title] if i != p) for e, p in zip(examples, positives, strict=True)]
        return Questions([e.question for e in examples], positives, [frozenset([p]) for p in positives], pool,
                         siblings)
    pairs = load_answers(name, "train")
    pool = list(dict.fromkeys(pair.answer for pair in pairs))
    place = {text: i for i, text in enumerate(pool)}
    answers: dict[str, set[int]] = defaultdict(set)
    for pair in pairs:
        answers[question_key(pair.question)].add(place[pair.answer])
    own = [frozenset(answers[question_key(pair.question)]) for pair in pairs]
    return Questions([pair.question for pair in pairs], [place[pair.answer] for pair in pairs], own, pool,
                     [() for _ in pairs])


def bm25_lists(name: str, questions: Questions, rows: list[int], depth: int) -> list[list[int]]:
    """Per row, the ``depth`` best passages of the pool by BM25 that are not relevant to its question."""
    from kalbert.text.lexical import BM25Index

    read = to_simplified if reads_simplified(name, LEXICAL_LANGUAGES) else str
    index = BM25Index.build([read(text) for text in questions.pool])
    widest = depth + max(len(questions.own[r]) for r in rows)
    found, _ = index.search([read(questions.queries[r]) for r in rows], widest)
    return [[int(i) for i in ranked if i not in questions.own[r]][:depth] for r, ranked in zip(rows, found,
                                                                                              strict=True)]


def dense_lists(miner: str, lang: str, questions: Questions, rows: list[int], depth: int, margin: float
                ) -> tuple[list[list[int]], int]:
    """Per row, the ``depth`` best passages of the pool by the dense miner's cosine that are not relevant to its
    question and score under ``margin`` x its own passage; and how many were passed over for scoring above that."""
    from kalbert.teachers.encoders import RoleEncoder, dense_vectors, load_teacher_encoder

    encoder = load_teacher_encoder(miner)
    passages = dense_vectors(RoleEncoder(encoder, "passage", lang), questions.pool)
    queries = dense_vectors(RoleEncoder(encoder, "query", lang), [questions.queries[r] for r in rows])
    lists, skipped = [], 0
    for start in range(0, len(rows), BLOCK):
        block = rows[start: start + BLOCK]
        scores = queries[start: start + BLOCK] @ passages.T
        for j, r in enumerate(block):
            row = scores[j]
            suspect = row >= margin * row[questions.positives[r]]
            own = list(questions.own[r])
            suspect[own] = False
            skipped += int(suspect.sum())
            row = np.where(suspect, -np.inf, row)
            row[own] = -np.inf
            ranked, values = top_k(row[None, :], depth)
            lists.append([int(i) for i, v in zip(ranked[0], values[0], strict=True) if np.isfinite(v)])
    return lists, skipped


def draw_negatives(lists: list[list[int]], own: frozenset[int], n: int, pool: int, rng: random.Random,
                   first: list[int] | None = None) -> tuple[list[int], bool]:
    """``n`` distinct negatives: ``first`` (already drawn), then drawn at random from the union of the miners'
    lists, topped up with random passages of the pool outside ``own`` when the union holds fewer; True when it
    was topped up."""
    picked = list(first or [])
    merged = [i for i in dict.fromkeys(i for ranked in lists for i in ranked) if i not in picked]
    if len(picked) + len(merged) >= n:
        return picked + rng.sample(merged, n - len(picked)), False
    picked, taken = picked + merged, set(picked) | set(merged) | own
    while len(picked) < n:
        i = rng.randrange(pool)
        if i not in taken:
            picked.append(i)
            taken.add(i)
    return picked, True


def build_train_set(ref: str, negatives: int, miner: str | None, depth: int, margin: float, max_rows: int | None,
                    seed: int, progress: Callable[[str], None] = log.info, article_negatives: int = 0
                    ) -> TrainSet:
    """The rows of one training set (:func:`train_ref`), each question with ``negatives`` hard negatives, up to
    ``article_negatives`` of them its own article's other paragraphs (drawn at random)."""
    name, _ = train_ref(ref)
    lang = get_spec(name).lang
    questions = load_questions(name)
    rng = random.Random(f"{seed}/{name}")
    rows = list(range(len(questions.queries)))
    if max_rows is not None and max_rows < len(rows):
        rows = sorted(rng.sample(rows, max_rows))
    widest_own = max((len(questions.own[r]) for r in rows), default=0)
    if len(questions.pool) - widest_own < negatives:
        raise KalbertError(f"{name}:train has {len(questions.pool)} passages, too few for {negatives} negatives "
                           "per question", f"use --negatives {max(1, len(questions.pool) - widest_own)} or less")
    progress(f"{name}:train: mining {negatives} negatives for {len(rows)} questions among {len(questions.pool)} "
             "passages")
    miners = {"bm25": bm25_lists(name, questions, rows, depth)}
    skipped = 0
    if miner:
        miners[miner], skipped = dense_lists(miner, lang, questions, rows, depth, margin)
    made, topped_up, from_article = [], 0, 0
    for k, r in enumerate(rows):
        siblings = list(questions.siblings[r])
        first = rng.sample(siblings, min(article_negatives, len(siblings)))
        picked, topped = draw_negatives([lists[k] for lists in miners.values()], questions.own[r], negatives,
                                        len(questions.pool), rng, first)
        topped_up += topped
        from_article += len(first)
        made.append(RerankRow(questions.queries[r], questions.pool[questions.positives[r]],
                              tuple(questions.pool[i] for i in picked)))
    return TrainSet(f"{name}:train", lang, made, len(questions.queries), len(questions.pool), list(miners),
                    topped_up, skipped, from_article)
