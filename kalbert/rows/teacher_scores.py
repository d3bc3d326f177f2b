"""A teacher's vectors of question -> passage rows, which score distillation reads as each row's labels.

In-batch negatives tell a student which passage of the batch is a question's own and nothing about the others; a
retrieval teacher also knows how close each other passage comes. The verbs distil its softmax over the batch's
passages (`sbert train`'s ScoreDistillLoss, `static train`'s ranking loss), computed from these vectors: read from
the retrieval benchmark's cache (:mod:`kalbert.teachers.encoders`), so a batch costs the student's pass alone and a
rerun encodes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from kalbert.rows.sets import RankedRows


@dataclass
class TeacherScores:
    """The teacher whose question and passage vectors label question -> passage rows, and the temperature of its
    cosines."""

    teacher: str
    temperature: float = 0.01
    batch_size: int = 32

    @cached_property
    def encoder(self) -> Any:
        """The teacher, loaded once for every set it labels."""
        from kalbert.teachers.encoders import load_teacher_encoder

        return load_teacher_encoder(self.teacher, batch_size=self.batch_size)

    def vectors(self, texts: list[str], role: str, lang: str) -> np.ndarray:
        """The teacher's unit vectors of ``texts`` in ``role`` (query or passage), each distinct text encoded once."""
        from kalbert.teachers.encoders import RoleEncoder, dense_vectors

        distinct = list(dict.fromkeys(texts))
        place = {text: i for i, text in enumerate(distinct)}
        encoded = dense_vectors(RoleEncoder(self.encoder, role, lang), distinct)
        return encoded[[place[text] for text in texts]].astype(np.float32)

    def row_vectors(self, rows: RankedRows, lang: str) -> list[np.ndarray]:
        """The vectors of ``rows``' questions (query role), passages and hard negatives (passage role; zeros where a
        row has none)."""
        anchors = self.vectors(rows.anchors, "query", lang)
        negatives = np.zeros_like(anchors)
        found = [i for i, n in enumerate(rows.negatives) if n is not None]
        if found:
            negatives[found] = self.vectors([rows.negatives[i] for i in found], "passage", lang)
        return [anchors, self.vectors(rows.positives, "passage", lang), negatives]
