"""Teacher-mined negatives: the best-ranked other passage, never one the teacher scores nearly as high as the
question's own (likely an answer too), never outside the training split; question -> answer rows get one too."""

from __future__ import annotations

import numpy as np

from kalbert.rows.build import training_rows
from kalbert.rows.config import RowsConfig
from kalbert.rows.negatives import pick_negatives
from kalbert.rows.question_passages import load_qa_triplets
from kalbert.rows.references import ROW_KINDS, resolve_refs


def _unit(rows: list[list[float]]) -> np.ndarray:
    vectors = np.array(rows, dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_a_candidate_scoring_near_the_positive_is_passed_over():
    queries = _unit([[1, 0, 0], [0, 1, 0]])
    passages = _unit([[1, 0, 0], [0.99, 0.14, 0], [0.8, 0.6, 0], [0, 1, 0]])
    picked, skipped = pick_negatives(queries, passages, np.array([0, 3]), margin=0.95)
    # query 0: passage 1 scores 0.99 of its own paragraph's 1.0, above the margin; passage 2 (0.8) is below
    assert picked.tolist() == [2, 2] and skipped == 1
    picked, skipped = pick_negatives(queries, passages, np.array([0, 3]), margin=1.0)
    assert picked.tolist() == [1, 2] and skipped == 0


def test_no_candidate_below_the_margin_means_no_mined_negative():
    queries = _unit([[1, 0]])
    passages = _unit([[1, 0], [1, 0.01]])
    picked, skipped = pick_negatives(queries, passages, np.array([0]), margin=0.5)
    assert picked.tolist() == [-1] and skipped == 1


def _mined(refs: list[str], miner: str, margin: float = 1.0):
    return training_rows(resolve_refs(refs, ROW_KINDS, "--train", []),
                         RowsConfig(negative_miner=miner, negative_margin=margin))


def test_mined_negatives_come_from_the_split_and_are_recorded(tiny_encoder, tiny_qa_data):
    rows = _mined(["korquad"], str(tiny_encoder))
    (qa,) = rows.sets
    train_paragraphs = {paragraph for _, paragraph, _ in load_qa_triplets("korquad", "train")}
    assert all(n in train_paragraphs and n != p for p, n in zip(qa.positives, qa.negatives, strict=True))
    (report,) = rows.mined
    assert report.questions == len(qa) and rows.record()["mined_negatives"][0]["miner"] == str(tiny_encoder)
    # a tiny random teacher ranks another article's paragraph first for some question
    assert report.replaced > 0


def test_question_answer_rows_get_another_answer_of_their_split_as_negative(tiny_encoder, tiny_answers):
    (answers,) = _mined(["answers-ko"], str(tiny_encoder)).sets
    own = dict(tiny_answers)
    assert answers.roles == ("query", "document", "document") and len(answers) > 0
    mined = [(q, n) for q, n in zip(answers.anchors, answers.negatives, strict=True) if n is not None]
    assert mined and all(n != own[q] and n in answers.positives for q, n in mined)


def test_no_miner_no_report():
    assert training_rows([], RowsConfig()).record() == {}
