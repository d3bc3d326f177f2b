"""Hard negatives for question -> passage training, mined and filtered by a teacher.

The article's next paragraph (:func:`kalbert.rows.question_passages.load_qa_triplets`) is a cheap hard negative:
same subject, no answer. A teacher finds harder ones: for each question, every passage of the same split (its
articles' paragraphs, or a question -> answer split's answers) ranked by the teacher's cosine (its
``query``/``passage`` prompts, as it retrieves). The best-ranked passage that is not the question's own becomes its
negative, unless the teacher scores it at or above ``margin`` x its score for the question's own passage: such a
passage most likely answers the question too (the same fact told twice), and training the student to push it away
would teach it wrong. That positive-aware threshold is NV-Retriever's; GISTEmbed drops in-batch negatives the
guide scores above the positive (``margin`` 1). The default 0.99 suits multilingual-e5-small, whose scores sit
close together (0.88 for a question's own paragraph, 0.86 for the best other, medians on KorQuAD train): at
NV-Retriever's 0.95 it passes over 41 (KorQuAD) to 145 (DRCD) paragraphs per train question and the "hard"
negative is a far one; at 0.99, 3 to 9 (``experiments/negative_margin.py``). A question with no passage under the
threshold keeps the negative it had (its article's next paragraph, or none).

Only the split's own paragraphs are candidates, so the article carve still keeps test articles out: a train
question is never given a test paragraph, as a positive or a negative. Teacher vectors are cached with the
retrieval benchmark's (:mod:`kalbert.teachers.encoders`), so a rerun of the same training encodes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

log = logging.getLogger(__name__)
BLOCK = 256
"""questions scored against every paragraph at once"""


@dataclass
class MinedNegatives:
    """What mining changed, for the model's record."""

    miner: str
    margin: float
    questions: int
    replaced: int
    """questions whose negative is now the teacher's, not the neighbouring paragraph"""
    skipped: int
    """paragraphs scored above the margin, passed over as likely answers (summed over the questions)"""

    def record(self) -> dict:
        return {"miner": self.miner, "margin": self.margin, "questions": self.questions,
                "replaced": self.replaced, "skipped_as_false_negatives": self.skipped}


def pick_negatives(queries: np.ndarray, passages: np.ndarray, positives: np.ndarray, margin: float
                   ) -> tuple[np.ndarray, int]:
    """Per query, the index of the highest-scoring passage that is not its positive and scores below ``margin`` x
    the positive's score (-1 where none does), and how many passages were passed over for scoring at or above it.
    Vectors are unit length; ``positives`` holds each query's passage index."""
    picked = np.full(len(queries), -1, dtype=np.int64)
    skipped = 0
    for start in range(0, len(queries), BLOCK):
        scores = queries[start: start + BLOCK] @ passages.T
        rows = np.arange(len(scores))
        own = positives[start: start + BLOCK]
        threshold = margin * scores[rows, own]
        suspect = scores >= threshold[:, None]
        suspect[rows, own] = False
        skipped += int(suspect.sum())
        allowed = np.where(suspect, -np.inf, scores)
        allowed[rows, own] = -np.inf
        best = allowed.argmax(axis=1)
        found = np.isfinite(allowed[rows, best])
        picked[start: start + BLOCK] = np.where(found, best, -1)
    return picked, skipped


@dataclass
class NegativeMiner:
    """A teacher that mines each question's negative, keeping a report per set it mined."""

    teacher: str
    margin: float = 0.99
    batch_size: int = 32
    reports: list[MinedNegatives] = field(default_factory=list)

    @cached_property
    def encoder(self) -> Any:
        """The teacher, loaded once for every set it mines."""
        from kalbert.teachers.encoders import load_teacher_encoder

        return load_teacher_encoder(self.teacher, batch_size=self.batch_size)

    def __call__(self, rows: list[tuple[str, str, str | None]], lang: str) -> list[tuple[str, str, str | None]]:
        """``rows`` (question, its paragraph, a neighbouring one or None) with the teacher's negative in third
        place wherever it found one among the rows' paragraphs (one split's articles)."""
        from kalbert.teachers.encoders import RoleEncoder, dense_vectors

        paragraphs = list(dict.fromkeys(positive for _, positive, _ in rows))
        place = {text: i for i, text in enumerate(paragraphs)}
        passages = dense_vectors(RoleEncoder(self.encoder, "passage", lang), paragraphs)
        queries = dense_vectors(RoleEncoder(self.encoder, "query", lang), [question for question, _, _ in rows])
        picked, skipped = pick_negatives(queries, passages, np.array([place[p] for _, p, _ in rows]), self.margin)
        mined = [(question, positive, paragraphs[i] if i >= 0 else negative)
                 for (question, positive, negative), i in zip(rows, picked, strict=True)]
        replaced = sum(new[2] != old[2] for new, old in zip(mined, rows, strict=True))
        self.reports.append(MinedNegatives(self.teacher, self.margin, len(rows), replaced, skipped))
        log.info("%s: %d of %d negatives mined by %s (%d candidates skipped as likely answers)", lang, replaced,
                 len(rows), self.teacher, skipped)
        return mined
