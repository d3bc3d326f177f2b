"""The question -> passage rows a training set gives: a QA set's own, or rows made from a plain corpus.

A corpus gives rows one of two ways (``corpus_rows``): inverse cloze rows, a sentence against the rest of its
paragraph (:mod:`kalbert.sentence.inverse_cloze`), or cloze questions, a sentence with one of its names or numbers
asked for against its whole paragraph, a sibling paragraph as the hard negative
(:mod:`kalbert.sentence.cloze_questions`).
"""

from __future__ import annotations

from kalbert.data import get_spec, load_question_passages
from kalbert.sentence.cloze_questions import cloze_question_rows
from kalbert.sentence.config import CorpusRows
from kalbert.sentence.inverse_cloze import inverse_cloze_rows


def question_passages(name: str, split: str, max_rows: int | None = None,
                      corpus_rows: CorpusRows = "inverse-cloze") -> list[tuple[str, str, str | None]]:
    """(question, its passage, a hard negative or None) rows of a set that trains as question -> passage search:
    a corpus's ``corpus_rows`` (up to ``max_rows``), else :func:`kalbert.data.load_question_passages`."""
    if get_spec(name).kind != "corpus":
        return load_question_passages(name, split)
    if corpus_rows == "cloze-questions":
        return list(cloze_question_rows(name, max_rows))
    return inverse_cloze_rows(name, max_rows)
