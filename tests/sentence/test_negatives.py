"""Teacher-mined negatives: the best-ranked other paragraph, never one the teacher scores nearly as high as the
question's own (likely an answer too), never outside the training split."""

from __future__ import annotations

import numpy as np

from kalbert.data import load_qa_triplets
from kalbert.sentence import load_sentence_model
from kalbert.sentence.negatives import NegativeMiner, pick_negatives
from kalbert.sentence.sts import build_tasks


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


def test_mined_negatives_come_from_the_split_and_are_recorded(tiny_sbert, tiny_qa_data):
    miner = NegativeMiner(str(tiny_sbert), margin=1.0)
    (task,) = build_tasks(load_sentence_model(tiny_sbert), [("korquad", "train")], "cosent", limit=None, miner=miner)
    train_paragraphs = {paragraph for _, paragraph, _ in load_qa_triplets("korquad", "train")}
    questions, positives, negatives = task.columns
    assert all(n in train_paragraphs and n != p for p, n in zip(positives, negatives, strict=True))
    (report,) = miner.reports
    assert report.questions == len(questions) and report.record()["miner"] == str(tiny_sbert)
    # a tiny random teacher ranks another article's paragraph first for some question
    assert report.replaced > 0
