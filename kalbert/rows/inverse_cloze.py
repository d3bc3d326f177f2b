"""Question -> passage rows from a plain corpus: one sentence of a paragraph finds the rest of it (inverse cloze).

The QA sets teach retrieval on a few thousand articles, and a student trained on them ranks its training articles
above its teacher and new ones well under it. A corpus has hundreds of thousands of paragraphs from other articles:
taking one sentence out of a paragraph as the query and the paragraph without it as the passage (Lee et al.'s
inverse cloze task, 2019) makes question -> passage rows on any of them, with no labelling. The sentence is taken
out so that the row is found by what the paragraph is about, not by copying it. Paragraphs are sampled as corpus
distillation samples them (:func:`kalbert.teachers.corpus.cached_sample`, stored beside the teacher-embedding
cache, so a rerun does not read the whole corpus again): no evaluation sentence, and no document that holds an
evaluation passage.
"""

from __future__ import annotations

import random

from kalbert.data import get_spec
from kalbert.errors import KalbertError
from kalbert.rows.config import CORPUS_ROWS
from kalbert.teachers.cache import default_cache_dir
from kalbert.teachers.corpus import cached_sample
from kalbert.text.sentences import split_sentences

MIN_SENTENCES = 3
"""sentences a paragraph needs: the query, and at least two left for the passage to be about something"""
QUERY_CHARS = (10, 200)
"""lengths a query sentence may have: one that says something, not a heading or a whole paragraph"""


def inverse_cloze_rows(name: str, wanted: int = CORPUS_ROWS, seed: int = 13) -> list[tuple[str, str, str | None]]:
    """Up to ``wanted`` (sentence, the rest of its paragraph, None) rows of corpus ``name``, the same for the same
    corpus file and seed."""
    if get_spec(name).kind != "corpus":
        raise KalbertError(f"'{name}' is not a corpus", "inverse cloze rows come from corpora, e.g. kowiki")
    # twice the rows: short paragraphs of fewer than MIN_SENTENCES sentences are passed over
    paragraphs = cached_sample([name], 2 * wanted, default_cache_dir() / "samples", seed, unit="paragraph").all()
    rng, rows = random.Random(f"{seed}-{name}-query"), []
    for paragraph in paragraphs:
        sentences = split_sentences(paragraph)
        places = [i for i, s in enumerate(sentences) if QUERY_CHARS[0] <= len(s) <= QUERY_CHARS[1]]
        if len(sentences) < MIN_SENTENCES or not places:
            continue
        place = rng.choice(places)
        rows.append((sentences[place], " ".join(sentences[:place] + sentences[place + 1:]), None))
        if len(rows) == wanted:
            break
    if not rows:
        raise KalbertError(f"corpus '{name}' has no paragraph of {MIN_SENTENCES} sentences or more",
                           "train on a corpus of paragraphs, one per line")
    return rows
