"""The config of `kalbert rerank train`, apart from the code that runs it (which imports torch), so that the verb's
--help and its input checks (:mod:`kalbert.inputs`) come first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from kalbert.training.config import LoopConfig

RerankLoss = Literal["lambda", "mnrl", "bce", "listnet"]
TRAIN_SETS = ("korquad:train", "cmrc2018:train", "drcd:train", "answers-ko:train", "answers-zh:train")
"""question -> paragraph (the QA sets' train articles) and question -> answer (the answer sets' train carves)"""
EVAL_SETS = ("korquad:val", "cmrc2018:val", "drcd:val", "answers-ko:dev", "answers-zh:dev")
"""the splits that pick the checkpoint: never a reported one"""
BM25 = "bm25"
"""the first stage named by name; any other value is a sentence model or teacher ranking by cosine"""


@dataclass
class RerankTrainConfig:
    """Fine-tuning a cross-encoder reranker (one relevance score per question and passage) from a kalbert ALBERT."""

    model: str
    """Start folder: an ALBERT checkpoint with its tokenizer, e.g. a QA model (models/qa-ko-zh-small: it was
    pretrained to read a question against a paragraph), a sentence model (its transformer) or a reranker."""
    out: str
    """Output reranker folder (the best evaluated checkpoint): loads with CrossEncoder(out) and
    AutoModelForSequenceClassification.from_pretrained(out)."""
    train: list[str] = field(default_factory=lambda: list(TRAIN_SETS))
    """Training sets, each at its train split: a QA set's train articles (each question against its paragraph) or a
    question -> answer set's train carve (each question against its answer)."""
    eval: list[str] = field(default_factory=lambda: list(EVAL_SETS))
    """Splits whose mean nDCG@10 after reranking picks the checkpoint: a QA set's val articles (among the val and
    train articles' paragraphs) or a question -> answer set's dev carve (among its answer pool)."""
    negatives: int = 7
    """Hard negatives per question, drawn from the miners' best-ranked passages of the same set's train split
    (never the question's own passage or another answer to it)."""
    negative_miner: str | None = None
    """Dense model that mines negatives beside BM25 (a sentence-model folder or a teacher such as
    multilingual-e5-small, with its prompts), skipping passages it scores at or above ``negative_margin`` x the
    question's own; None: BM25 alone."""
    negative_depth: int = 30
    """Best-ranked passages of each miner that negatives are drawn from (at random, seeded): deep enough to
    vary them, shallow enough to stay hard."""
    negative_margin: float = 0.99
    """Share of the dense miner's score for a question's own passage that a mined negative must stay under (a
    passage scored that close most likely answers the question too)."""
    article_negatives: int = 0
    """Of a QA question's ``negatives``, how many (at most) are drawn at random from its own article's other
    paragraphs rather than the miners' lists: most of a reranker's misses put such a paragraph above the gold.
    Answer sets have no articles and take none."""
    first_stage: str = BM25
    """What ranks the evaluation candidates: bm25, or a sentence model or teacher (cosine with its prompts)."""
    depth: int = 20
    """First-stage candidates reranked per evaluation question (its top-K); the rest keep their order."""
    max_seq_length: int = 256
    """Tokens per question + passage pair: cost grows with it. Training cuts a longer pair (the longer side
    first); scoring reads a longer passage in windows of this many tokens (``window_stride``), unless
    `kalbert rerank export --window-tokens` records a shorter pair chosen on dev."""
    window_stride: int = 64
    """Passage tokens shared by consecutive windows when a passage is longer than a pair holds; the passage
    scores its best window (an answer past the cut is then read). The saved folder records it in kalbert.json;
    a plain CrossEncoder load reads the first max_position_embeddings tokens instead."""
    windows_per_passage: int | None = 1
    """Windows of a long passage scoring reads: those sharing most query tokens (a token rarer among the query's
    windows counting more), the passage scoring its best (None: every window). Recorded in the folder. Reading one
    scored as well as reading all on the selection splits at half the tokens, so half the time."""
    train_on_windows: bool = False
    """Train on the window of each long passage that scoring reads (its best-matching one, as
    ``windows_per_passage`` 1 picks it among the question's list) instead of its first ``max_seq_length`` tokens, so
    a long paragraph's answer is not cut away from its positive pair. The shipped reranker trained with it on."""
    first_stage_weight: float = 0.6
    """How much of the first stage's order a reranking keeps: the reranker's scores, standardised over a query's
    candidates, minus this x ln(1 + first-stage rank) rank them (0: its scores alone). Recorded in the folder,
    which search and the benchmark read. 0.6 was the best of 0, 0.3-1.5 on the val articles and dev carves."""
    hybrid_score_weight: float | None = 1.0
    """How much a hybrid first stage's scores count beside the reranker's: search and the benchmark rank a hybrid's
    candidates by the reranker's standardised scores plus this x the hybrid scores standardised over the same
    candidates (score fusion; None: rank fusion by ``first_stage_weight``, as for BM25 and dense candidates).
    Recorded in the folder; this run's evaluations rank BM25's or a dense model's candidates and do not use it.
    1.0 ranked above rank fusion on the hybrid top 20 of dev questions."""
    max_rows: int | None = None
    """Use at most this many questions of each training set, a seeded sample (None: all)."""
    max_eval_rows: int | None = 200
    """Score at most this many questions of each evaluation split, a seeded sample fixed for the run (None: all)."""
    loss: RerankLoss = "lambda"
    """sentence-transformers' cross-encoder loss: lambda (LambdaLoss, NDCG-weighted pairs over each question's
    list), mnrl (MultipleNegativesRankingLoss: softmax over the positive, the hard negatives and
    ``in_batch_negatives`` other rows' passages), bce (BinaryCrossEntropyLoss, each pair on its own) or listnet
    (ListNetLoss: cross-entropy between the softmax of the labels and of the scores over each question's list; the
    loss that learns a ``teacher``'s scores)."""
    teacher: str | None = None
    """A reranker folder whose scores of each training list the model learns (distillation, with loss listnet: the
    teacher's softmax over a question's passages is the target); None: the gold labels (1 for the question's own
    passage, 0 for its negatives)."""
    layers: int | None = None
    """Transformer layers the model runs (num_hidden_layers); None: the start's. An ALBERT applies one shared layer
    that many times, so fewer passes read the same weights in proportionally less time (e.g. 3 of a reranker's 6,
    distilled from it with ``teacher``)."""
    in_batch_negatives: int = 1
    """For mnrl: other questions' passages of the batch scored as further negatives of each question."""
    loop: LoopConfig = field(default_factory=lambda: LoopConfig(epochs=1.0, batch_size=16, lr=3e-5,
                                                                eval_steps=500))
    """Optimisation and evaluation schedule (a batch is questions, each with its positive and negatives)."""
