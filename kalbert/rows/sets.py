"""The typed rows a training reference becomes: graded pairs, or ranked rows trained with in-batch negatives.

A verb turns each into a loss of its own (CoSENT for graded pairs, in-batch negatives for ranked rows), so these
hold texts and numbers only: no model, no tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kalbert.rows.references import TrainingRef

QUESTION_PASSAGE_ROLES = ("query", "document", "document")
"""the prompt each column of a question -> passage row is encoded with (``encode_query`` / ``encode_document``)"""


@dataclass
class GradedPairs:
    """An STS or (graded) paraphrase set, or a graded-pair file: pairs of texts with gold scores in [0, 1]."""

    ref: TrainingRef
    left: list[str]
    right: list[str]
    scores: np.ndarray

    @property
    def label(self) -> str:
        return self.ref.label

    def __len__(self) -> int:
        return len(self.scores)

    def repeated(self, times: int) -> GradedPairs:
        """Every pair ``times`` times, in order."""
        return GradedPairs(self.ref, self.left * times, self.right * times, np.tile(self.scores, times))


@dataclass
class RankedRows:
    """(anchor, positive, hard negative or None) rows, each anchor to pick its positive among the batch's: NLI
    (premise, entailed, contradicted), paraphrases, translations, or question -> passage rows."""

    ref: TrainingRef
    anchors: list[str]
    positives: list[str]
    negatives: list[str | None]
    roles: tuple[str, ...] = ()
    """the prompt each column is encoded with (:data:`QUESTION_PASSAGE_ROLES` for question -> passage rows); empty:
    the model's default"""
    teacher: list[np.ndarray] | None = None
    """a score teacher's unit vectors of the anchors (query role), positives and negatives (passage role; zeros
    where a row has no negative), when rows distil its scores"""

    @property
    def label(self) -> str:
        return self.ref.label

    def __len__(self) -> int:
        return len(self.anchors)

    def repeated(self, times: int) -> RankedRows:
        """Every row ``times`` times, in order, teacher vectors included."""
        return RankedRows(self.ref, self.anchors * times, self.positives * times, self.negatives * times, self.roles,
                          None if self.teacher is None else [np.tile(vectors, (times, 1)) for vectors in self.teacher])

    def capped(self, limit: int | None) -> RankedRows:
        """The first ``limit`` rows with a hard negative and the first ``limit`` without, in their order (the two
        train as separate column layouts, each capped), teacher vectors included."""
        if not limit:
            return self
        kept: list[int] = []
        counts = {True: 0, False: 0}
        for i, negative in enumerate(self.negatives):
            if counts[negative is not None] < limit:
                counts[negative is not None] += 1
                kept.append(i)
        return RankedRows(self.ref, [self.anchors[i] for i in kept], [self.positives[i] for i in kept],
                          [self.negatives[i] for i in kept], self.roles,
                          None if self.teacher is None else [vectors[kept] for vectors in self.teacher])


RowSet = GradedPairs | RankedRows
