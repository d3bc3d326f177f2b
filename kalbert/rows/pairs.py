"""Rows of the pair sets: graded pairs (STS sets, graded paraphrase sets, graded-pair files), NLI triplets,
paraphrase positives and translations, made from the typed records :mod:`kalbert.data` reads."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np

from kalbert.data import get_spec, load_nli, load_pairs, load_parallel, load_sts
from kalbert.data.heldout import load_clean_sts_file
from kalbert.data.registry import assert_trainable
from kalbert.errors import KalbertError
from kalbert.rows.references import FILE, TrainingRef
from kalbert.rows.sets import GradedPairs, RankedRows


def load_graded(name: str, split: str) -> list[tuple[str, str, float]]:
    """(sentence1, sentence2, score in [0, 1]) rows, the form graded-pair losses read: an STS set's pairs with
    score / 5, a paraphrase-pair set's with its label (1 or 0)."""
    if get_spec(name).kind == "sts":
        return [(p.sentence1, p.sentence2, p.score / 5.0) for p in load_sts(name, split)]
    return [(p.sentence1, p.sentence2, float(p.label)) for p in load_pairs(name, split)]


def load_nli_triplets(name: str, split: str) -> list[tuple[str, str, str | None]]:
    """(premise, entailed hypothesis, a contradicted hypothesis of the same premise or None) rows: what
    in-batch-negative losses read from an NLI set, the contradiction being the hard negative."""
    by_premise: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for pair in load_nli(name, split):
        by_premise[pair.premise][pair.label].append(pair.hypothesis)
    rows = []
    for premise, hypotheses in by_premise.items():
        negatives = hypotheses["contradiction"]
        rows += [(premise, positive, negatives[i % len(negatives)] if negatives else None)
                 for i, positive in enumerate(hypotheses["entailment"])]
    return rows


def graded_pairs(ref: TrainingRef) -> GradedPairs:
    """A graded-pair file (refused if it holds an evaluation sentence), STS set or paraphrase set as graded pairs."""
    if ref.split == FILE:
        rows = [(p.sentence1, p.sentence2, p.score / 5.0) for p in load_clean_sts_file(ref.name)]
    else:
        rows = load_graded(ref.name, ref.split)
    return GradedPairs(ref, [a for a, _, _ in rows], [b for _, b, _ in rows],
                       np.array([score for _, _, score in rows], dtype=np.float32))


def nli_rows(ref: TrainingRef) -> RankedRows:
    """An NLI set's premises, each with an entailed hypothesis and, where it has one, a contradicted one."""
    triplets = load_nli_triplets(ref.name, ref.split)
    return RankedRows(ref, [t[0] for t in triplets], [t[1] for t in triplets], [t[2] for t in triplets])


def paraphrase_rows(ref: TrainingRef) -> RankedRows:
    """A paraphrase-pair set's paraphrases (label 1) with no hard negative: the rest of the batch are the negatives."""
    pairs = [(p.sentence1, p.sentence2) for p in load_pairs(ref.name, ref.split) if p.label == 1]
    return RankedRows(ref, [a for a, _ in pairs], [b for _, b in pairs], [None] * len(pairs))


def translation_pairs(name: str, languages: list[str]) -> RankedRows:
    """A parallel set's sentences paired with their translations, for each two of the model's languages."""
    assert_trainable(name, "all")
    parallel = load_parallel(name)
    columns = [i for i, lang in enumerate(parallel.languages) if lang in languages]
    if len(columns) < 2:
        raise KalbertError(f"{name} holds {'/'.join(parallel.languages)} sentences, and this static model reads "
                           f"{'/'.join(languages) or 'one language'}",
                           "give --sts a parallel set with two of the model's languages, e.g. parallel-stsb-train")
    rows = [(row[i], row[j]) for i, j in itertools.combinations(columns, 2) for row in parallel.rows
            if row[i] and row[j]]
    return RankedRows(TrainingRef(name, "all", "parallel", get_spec(name).lang), [a for a, _ in rows],
                      [b for _, b in rows], [None] * len(rows))
