"""Question -> passage rows: a QA set's questions against their paragraph, a question -> answer set's against each
of their answers, a corpus's sentences against the rest of their paragraph (:mod:`kalbert.rows.inverse_cloze`)."""

from __future__ import annotations

from collections import defaultdict

from kalbert.data import get_spec, load_answers, load_qa
from kalbert.rows.inverse_cloze import inverse_cloze_rows
from kalbert.rows.references import TrainingRef
from kalbert.rows.sets import QUESTION_PASSAGE_ROLES, RankedRows


def load_qa_triplets(name: str, split: str) -> list[tuple[str, str, str | None]]:
    """(question, its paragraph, another paragraph of the same article or None) rows: question -> passage
    retrieval pairs from an extractive QA split, the neighbouring paragraph as the hard negative (same
    subject and names, no answer). Nothing crosses the article carve, so test articles stay unseen."""
    by_title: dict[str, list[str]] = defaultdict(list)
    examples = load_qa(name, split)
    for example in examples:
        if example.context not in by_title[example.title]:
            by_title[example.title].append(example.context)
    rows = []
    for example in examples:
        paragraphs = by_title[example.title]
        if len(paragraphs) < 2:
            rows.append((example.question, example.context, None))
            continue
        place = paragraphs.index(example.context)
        rows.append((example.question, example.context, paragraphs[(place + 1) % len(paragraphs)]))
    return rows


def load_question_passages(name: str, split: str, corpus_rows: int) -> list[tuple[str, str, str | None]]:
    """(question, its passage, a hard negative or None) rows of a set that trains as question -> passage search:
    a QA split's (:func:`load_qa_triplets`), a question -> answer split's (each question with each of its answers,
    no negative: a miner adds one), or ``corpus_rows`` inverse cloze rows of a corpus."""
    kind = get_spec(name).kind
    if kind == "answers":
        return [(pair.question, pair.answer, None) for pair in load_answers(name, split)]
    if kind == "corpus":
        return inverse_cloze_rows(name, corpus_rows)
    return load_qa_triplets(name, split)


def question_passage_rows(ref: TrainingRef, corpus_rows: int) -> RankedRows:
    """:func:`load_question_passages` as rows encoded with the query and document prompts."""
    rows = load_question_passages(ref.name, ref.split, corpus_rows)
    return RankedRows(ref, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], QUESTION_PASSAGE_ROLES)
