"""The config of `kalbert static train`, apart from the code that runs it (which imports torch), so that the
verb's --help and its input checks (:mod:`kalbert.inputs`) come before any of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from kalbert.rows.config import RowsConfig
from kalbert.static.weighting import Weighting
from kalbert.teachers.backends import TeacherBackend
from kalbert.training.config import LoopConfig


@dataclass
class StaticTrainConfig:
    """Static piece vectors fitted to a teacher's sentence vectors on corpus sentences, then optionally to STS."""

    init: str
    """Static model to start from (kalbert static distill); its PCA projects the teacher's vectors."""
    out: str
    """Output static-model folder (the best evaluated checkpoint of either phase)."""
    corpus: list[str] = field(default_factory=list)
    """Corpora (names or files) whose sentences' teacher vectors the model learns to match."""
    max_sentences: int = 150_000
    """Corpus sentences sampled (deduplicated, language-balanced)."""
    teacher: str = "multilingual-e5-small"
    """The teacher the init model was distilled from (its projection fits only that teacher's vectors)."""
    sts: list[str] = field(default_factory=list)
    """Pair sets trained after the corpus phase: STS sets and graded-pair TSV files (`kalbert sbert mine`) with
    CoSENT, paraphrase sets as ``pair_loss`` says (graded: CoSENT); NLI sets (e.g. ocnli, kornli:dev), QA and
    question -> answer sets (korquad, cmrc2018, drcd, answers-ko: each train question against its paragraph or
    answer; a corpus such as kowiki: sentences against the rest of their paragraph) and parallel sets (e.g.
    parallel-stsb-train) with in-batch negatives (default split train; evaluation splits such as korsts:test are
    refused)."""
    rows: RowsConfig = field(default_factory=lambda: RowsConfig(pair_loss="graded"))
    """How the --sts sets become rows (:mod:`kalbert.rows`): mined negatives and teacher scores for the question ->
    passage sets, as in `kalbert sbert train`."""
    eval: list[str] | None = None
    """Dev splits whose mean picks the best checkpoint: STS dev splits, or a QA set's val articles scored as
    retrieval, nDCG@10 (e.g. korquad:val); default korsts:dev for Korean, stsb-zh:dev for Chinese."""
    dim: int | None = None
    """Keep the first this many dimensions of the init model (default: all)."""
    weighting: Weighting | None = None
    """Piece weights (default: the init model's)."""
    sif_a: float | None = None
    """The a of a/(a+p) (default: the init model's)."""
    loss: Literal["cosine", "mse"] = "cosine"
    """How a sentence's mean vector is compared with its projected teacher vector."""
    matryoshka_dims: list[int] = field(default_factory=list)
    """Also fit these prefixes (e.g. 128 64), so that truncated vectors stay good."""
    sts_epochs: int = 2
    """Passes over the --sts pairs (``epochs`` are the passes over the corpus sentences)."""
    dev_rows: int = 1000
    """Corpus sentences held out, never trained on, for the held-out loss."""
    cache_dir: str | None = None
    """Teacher-embedding cache; default $XDG_CACHE_HOME/kalbert/teacher-embeddings."""
    teacher_backend: TeacherBackend = "auto"
    """How the teacher encodes what the cache lacks: auto (the fastest backend this CPU runs whose vectors keep
    cosine >= 0.999 to torch fp32 on a probe of 256 of the sentences), torch (fp32), torch-bf16, onnx or
    onnx-int8 (refused below cosine 0.999). Their vectors share one cache."""
    loop: LoopConfig = field(default_factory=lambda: LoopConfig(epochs=3, batch_size=256, lr=1e-3, weight_decay=0.0,
                                                                precision="fp32"))
    """Optimisation and evaluation schedule of each phase (a batch is sentences, or pairs of one set; weight decay
    pulls rarely seen pieces towards zero; fp32 by default: a bag of vectors has few matmuls to speed up)."""
