"""Extractive question answering (KorQuAD 1.0, CMRC 2018, DRCD) with an ALBERT or BERT ...ForQuestionAnswering."""

from kalbert.tasks.configs import QA_TASKS, QATrainConfig
from kalbert.tasks.qa.features import Answer, align_normalized, label_window, make_windows, nbest_answers
from kalbert.tasks.qa.metrics import qa_scores
from kalbert.tasks.qa.model import QAModel, QASettings, predict_qa
from kalbert.tasks.qa.train import evaluate_qa, train_qa

__all__ = [
    "QA_TASKS", "Answer", "QAModel", "QASettings", "QATrainConfig", "align_normalized", "evaluate_qa",
    "label_window", "make_windows", "nbest_answers", "predict_qa", "qa_scores", "train_qa",
]
