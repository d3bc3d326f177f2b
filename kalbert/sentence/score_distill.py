"""Listwise distillation of a teacher's question -> paragraph scores, beside in-batch negatives.

In-batch negatives (MultipleNegativesRankingLoss) tell the student which paragraph of the batch is a question's
own and nothing about the others: a paragraph of the same subject and one about something else are pushed away
alike. A retrieval teacher knows more: how close each other paragraph comes. :class:`ScoreDistillLoss` adds the
KL divergence from the teacher's softmax over every paragraph of the batch (positives and hard negatives of every
row) to the student's, so the student learns the teacher's ranking of the near misses, not just the hit
(listwise distillation, as RocketQAv2 and the score-distilled dense retrievers do).

The teacher's vectors ride along as each row's labels (question, paragraph[, negative], concatenated; the rows
layer computes them, :mod:`kalbert.rows.teacher_scores`), so a batch costs the student's forward pass only.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.nn import functional

SCALE = 20.0
"""the student's cosine scale, as MultipleNegativesRankingLoss's default"""


class ScoreDistillLoss(torch.nn.Module):
    """In-batch cross-entropy (the question's own paragraph among every paragraph of the batch) plus the KL
    divergence from the teacher's scores over the same paragraphs at ``temperature``."""

    def __init__(self, model: Any, temperature: float, scale: float = SCALE) -> None:
        super().__init__()
        self.model, self.temperature, self.scale = model, temperature, scale

    def forward(self, features: list[dict[str, torch.Tensor]], labels: torch.Tensor) -> torch.Tensor:
        """``features``: question, paragraph[, negative] columns; ``labels``: the teacher's unit vectors of the
        same texts, concatenated per row ([batch, columns x teacher dimension])."""
        embeddings = [functional.normalize(self.model(f)["sentence_embedding"], dim=-1) for f in features]
        questions, paragraphs = embeddings[0], torch.cat(embeddings[1:])
        student = questions @ paragraphs.T * self.scale
        own = torch.arange(len(questions), device=student.device)
        teacher_vectors = labels.reshape(len(questions), len(features), -1)
        teacher_paragraphs = teacher_vectors[:, 1:].transpose(0, 1).reshape(-1, teacher_vectors.shape[-1])
        teacher = teacher_vectors[:, 0] @ teacher_paragraphs.T / self.temperature
        return functional.cross_entropy(student, own) + score_kl(student, teacher)


def score_kl(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """KL divergence from the teacher's softmax over each question's candidates to the student's (logits in, one
    row per question), averaged over the questions."""
    return functional.kl_div(student.log_softmax(-1), teacher.log_softmax(-1), reduction="batchmean", log_target=True)
