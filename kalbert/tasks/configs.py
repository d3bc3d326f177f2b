"""The configs of the task verbs (`kalbert mc train|average`, `kalbert qa train`) and their task tables.

Apart from the code that runs them, which imports torch, so that a verb's --help and its input checks
(:mod:`kalbert.inputs`) come before any of it; the running modules import them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from kalbert.precision import Precision
from kalbert.training.config import LoopConfig

if TYPE_CHECKING:
    from kalbert.tasks.qa.model import QASettings


@dataclass(frozen=True)
class MCSplits:
    """Which split each stage of a task uses."""

    train: str
    """fine-tuned on"""
    select: str | None
    """epoch selection (None: keep the last epoch, for tasks whose only other split is the test)"""
    report: str
    """the accuracy reported: the test split where its labels are public, else dev"""


MC_TASKS: dict[str, MCSplits] = {
    "kobest-copa": MCSplits("train", "dev", "test"),
    "kobest-hellaswag": MCSplits("train", "dev", "test"),
    "kobest-boolq": MCSplits("train", "dev", "test"),  # "question 예" against "question 아니요" after the passage
    "c3": MCSplits("train", "dev", "test"),
    "chid": MCSplits("train", "dev", "test_public"),
    "xcopa-zh": MCSplits("dev", None, "test"),  # XCOPA has no training split: train on val (100 examples)
}
MCTask = Literal[tuple(MC_TASKS)]  # type: ignore[valid-type]  # the task names, as flag choices

@dataclass
class MCTrainConfig:
    """A multiple-choice fine-tuning run; defaults fit a small ALBERT on a CPU in minutes."""

    model: str
    """ALBERT or BERT folder with its tokenizer (a pretraining checkpoint, a transplant, a teacher folder), or
    multilingual-e5-small for the exported teacher"""
    task: MCTask
    """the multiple-choice task"""
    out: str
    """output folder for the fine-tuned model"""
    max_seq_length: int = 128
    """tokens per (context, choice) pair; the longer segment is truncated first"""
    extra_train: str | None = None
    """a file of further training examples in the task's own format, joined to its train split (for chid:
    idiom cloze from a corpus, `kalbert mc cloze`)"""
    max_rows: int | None = None
    """use only the first N training examples (quick runs and tests)"""
    max_eval_rows: int | None = None
    """evaluate only the first N examples of the selection and report splits (quick runs and tests)"""
    loop: LoopConfig = field(default_factory=lambda: LoopConfig(epochs=3, batch_size=16, lr=3e-5))
    """optimisation and evaluation schedule (a batch is examples, each with all its choices; an epoch's
    evaluation picks the best on the selection split)"""


@dataclass
class MCAverageConfig:
    """Which multiple-choice models to average, with what weights."""

    models: list[str]
    """Folders written by `kalbert mc train` for one task from one starting model (e.g. one seed at several
    learning rates)."""
    out: str
    """Output folder: a multiple-choice model folder with the averaged weights, kalbert.json and a card."""
    weights: list[float] = field(default_factory=list)
    """One weight per model, normalised to sum to 1 (default: equal weights)."""
    batch_size: int = 16
    """Questions per batch when measuring."""
    max_eval_rows: int | None = None
    """Measure only the first N questions of the selection and report splits (quick runs and tests)."""
    precision: Precision = "auto"
    """auto: bf16 autocast where the hardware has native bf16, else fp32; fp32 or bf16 to force one"""


@dataclass(frozen=True)
class QASplits:
    train: str
    """fine-tuned on"""
    select: str
    """picks the epoch"""
    report: str
    """the EM/F1 reported (an evaluation split, never trained on)"""


QA_TASKS: dict[str, QASplits] = {
    "korquad": QASplits("train", "val", "test"),
    "cmrc2018": QASplits("train", "val", "test"),
    "drcd": QASplits("train", "val", "test"),
}
QATask = Literal[tuple(QA_TASKS)]  # type: ignore[valid-type]  # the task names, as flag choices


@dataclass
class QATrainConfig:
    """An extractive-QA fine-tuning run; defaults follow ALBERT's SQuAD recipe at a smaller batch."""

    model: str
    """ALBERT or BERT folder with its tokenizer (a pretraining checkpoint, a transplant, a teacher folder), or
    multilingual-e5-small for the exported teacher"""
    task: QATask
    """the QA task: its val part picks the epoch, its test part is reported"""
    out: str
    """output folder for the fine-tuned model"""
    train: list[QATask] = field(default_factory=list)
    """QA sets whose train parts are pooled for fine-tuning (default: the task's own), e.g. cmrc2018 drcd, or
    korquad cmrc2018 drcd for one ko+zh model"""
    max_seq_length: int = 384
    """tokens per window"""
    doc_stride: int = 128
    """tokens shared by consecutive windows of a long context"""
    max_query_length: int = 64
    """longer questions are cut, in tokens"""
    max_answer_length: int = 30
    """longest answer, in tokens"""
    max_rows: int | None = None
    """use only the first N training questions of each training set (quick runs and tests)"""
    max_eval_rows: int | None = None
    """score only the first N questions of val and test (quick runs and tests; the result says so)"""
    loop: LoopConfig = field(default_factory=lambda: LoopConfig(epochs=3, batch_size=16, lr=5e-5))
    """optimisation and evaluation schedule (a batch is windows; the best evaluation on val is kept)"""

    def settings(self) -> QASettings:
        from kalbert.tasks.qa.model import QASettings

        return QASettings(max_seq_length=self.max_seq_length, doc_stride=self.doc_stride,
                          max_query_length=self.max_query_length, max_answer_length=self.max_answer_length)
