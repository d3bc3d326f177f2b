"""Question -> passage rows from a plain corpus that are built like the QA sets' rows.

A QA set's question is one sentence of its paragraph with the answer asked for, and its hard negative is another
paragraph of the same article. Inverse cloze rows (:mod:`kalbert.sentence.inverse_cloze`) keep neither: the query
is a statement, taken out of its paragraph. Here each sampled document gives two rows: for two of its paragraphs,
a sentence of each with one of its names or numbers asked for (:func:`kalbert.text.questions.question_form`)
finds its whole paragraph, with the other paragraph as its hard negative: the same subject, another fact. So the
rows teach what the QA sets teach (which paragraph of an article holds the fact asked for) on as many new articles
as wanted. Documents are sampled through :func:`kalbert.teachers.corpus.sample_documents`: none holding an
evaluation passage, no paragraph holding an evaluation sentence.
"""

from __future__ import annotations

import itertools
import random

from kalbert.data import get_spec
from kalbert.errors import KalbertError
from kalbert.teachers.corpus import sample_documents
from kalbert.text.questions import question_form
from kalbert.text.sentences import split_sentences

CLOZE_QUESTION_ROWS = 2000
"""rows a corpus gives when no --max-rows caps it (as many as inverse cloze rows)"""
QUESTION_CHARS = (10, 200)
"""lengths a sentence asked about may have: one that says something, not a heading or a whole paragraph"""


def cloze_question_rows(name: str, max_rows: int | None = None, seed: int = 13) -> list[tuple[str, str, str]]:
    """Up to ``max_rows`` (default :data:`CLOZE_QUESTION_ROWS`) (question, its paragraph, a sibling paragraph) rows
    of corpus ``name``, two per sampled document, the same for the same corpus file and seed."""
    spec = get_spec(name)
    if spec.kind != "corpus":
        raise KalbertError(f"'{name}' is not a corpus", "cloze questions come from corpora, e.g. kowiki")
    wanted = max_rows or CLOZE_QUESTION_ROWS
    rng, rows = random.Random(f"{seed}-{name}-questions"), []
    for paragraphs in sample_documents(name, wanted, seed):  # twice the documents needed: some have no question
        questions = ((q, p) for p in rng.sample(paragraphs, len(paragraphs)) if (q := _question(p, spec.lang, rng)))
        asked = list(itertools.islice(questions, 2))
        if len(asked) == 2:
            (first, first_paragraph), (second, second_paragraph) = asked
            rows += [(first, first_paragraph, second_paragraph), (second, second_paragraph, first_paragraph)]
        if len(rows) >= wanted:
            break
    if not rows:
        raise KalbertError(f"corpus '{name}' has no document with two paragraphs to ask about",
                           "train on a corpus of documents, one paragraph per line")
    return rows[:wanted]


def _question(paragraph: str, lang: str, rng: random.Random) -> str | None:
    """A question about one sentence of ``paragraph`` (tried in random order), or None."""
    sentences = [s for s in split_sentences(paragraph) if QUESTION_CHARS[0] <= len(s) <= QUESTION_CHARS[1]]
    for sentence in rng.sample(sentences, len(sentences)):
        if question := question_form(sentence, lang, rng):
            return question
    return None
