"""Teacher-score distillation for question -> paragraph rows: the teacher's vectors label each row, and a student
that already scores like its teacher pays only the in-batch cross-entropy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kalbert.errors import KalbertError
from kalbert.rows.config import RowsConfig
from kalbert.sentence import load_sentence_model
from kalbert.sentence.config import SentenceTrainConfig
from kalbert.sentence.score_distill import SCALE, ScoreDistillLoss
from kalbert.sentence.train import train_sentence_model
from kalbert.teachers.encoders import RoleEncoder, load_teacher_encoder


def test_rows_are_labelled_with_the_teachers_question_and_paragraph_vectors(tasks_of, tiny_sbert, tiny_qa_data):
    model = load_sentence_model(tiny_sbert)
    (task,) = tasks_of(model, ["korquad"], max_rows=6, score_teacher=str(tiny_sbert))
    assert isinstance(task.loss, ScoreDistillLoss) and task.labels.shape[0] == len(task)
    encoder = load_teacher_encoder(str(tiny_sbert))
    width = task.labels.shape[1] // len(task.columns)
    for c, (column, role) in enumerate(zip(task.columns, ("query", "passage", "passage"), strict=True)):
        expected = RoleEncoder(encoder, role, "ko").encode(column[:2])
        np.testing.assert_allclose(task.labels[:2, c * width:(c + 1) * width], expected, atol=2e-3)


def test_a_student_that_scores_like_its_teacher_pays_only_the_in_batch_loss(tasks_of, tiny_sbert, tiny_qa_data):
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = load_sentence_model(tiny_sbert).eval()
    (task,) = tasks_of(model, ["korquad"], max_rows=8, score_teacher=str(tiny_sbert))
    features = [model.preprocess(list(column), prompt=model.prompts.get(name))
                for column, name in zip(task.columns, task.prompt_names, strict=True)]
    with torch.no_grad():
        labels = torch.as_tensor(task.labels)
        same = ScoreDistillLoss(model, temperature=1 / SCALE)(features, labels).item()
        in_batch = MultipleNegativesRankingLoss(model)(features, labels).item()
        sharper = ScoreDistillLoss(model, temperature=0.2 / SCALE)(features, labels).item()
    assert same == pytest.approx(in_batch, abs=1e-3)
    assert sharper > in_batch + 1e-3


def test_score_distillation_refuses_mini_batches(tiny_sbert, tmp_path):
    config = SentenceTrainConfig(model=str(tiny_sbert), out=str(tmp_path / "out"), train=["korquad"],
                                 eval="korquad:val", rows=RowsConfig(score_teacher=str(tiny_sbert)), mini_batch_size=4)
    with pytest.raises(KalbertError, match="cannot be combined"):
        train_sentence_model(config)
