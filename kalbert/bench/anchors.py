"""Published numbers kalbert's results are read against, each with the split, metric and source.

They are quoted, not measured here: the report prints them in their own block, never mixed with
kalbert's rows. Values are x100; STS anchors are cosine Spearman unless ``metric`` says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Anchor:
    """One published result."""

    task: str
    """benchmark task name (kalbert.bench.tasks) the number belongs to"""
    split: str
    """the split it was computed on"""
    model: str
    """the published model"""
    metric: str
    """"spearman" (cosine Spearman x100), "accuracy" or "f1" (x100)"""
    value: float
    source: str
    """URL of the model card or paper that reports it"""


_SROBERTA = "https://huggingface.co/jhgan/ko-sroberta-multitask"
_KOSIMCSE = "https://github.com/BM-K/Sentence-Embedding-Is-All-You-Need"
_ALBERT_SBERT = "https://huggingface.co/bongsoo/albert-small-kor-sbert-v1.1"
_E5 = "https://huggingface.co/intfloat/multilingual-e5-large"
_TEXT2VEC = "https://github.com/shibing624/text2vec"
_CLUE = "https://arxiv.org/abs/2004.05986"
_KOBERT_KORQUAD = "https://github.com/monologg/KoBERT-KorQuAD"
_ALBERT_ZH = "https://github.com/brightmart/albert_zh"

ANCHORS: tuple[Anchor, ...] = (
    Anchor("korsts", "test", "ko-sroberta-multitask", "spearman", 85.60, _SROBERTA),
    Anchor("korsts", "test", "KoSimCSE-RoBERTa-multitask", "spearman", 86.12, _KOSIMCSE),
    Anchor("korsts", "test", "albert-small-kor-sbert-v1.1", "spearman", 85.26, _ALBERT_SBERT),
    Anchor("korsts", "test", "paraphrase-multilingual-MiniLM-L12-v2", "spearman", 74.42, _ALBERT_SBERT),
    Anchor("klue-sts", "dev", "albert-small-kor-sbert-v1.1", "spearman", 88.33, _ALBERT_SBERT),
    Anchor("klue-sts", "dev", "multilingual-e5-large", "spearman", 83.36, _E5),
    Anchor("klue-sts", "dev", "paraphrase-multilingual-MiniLM-L12-v2", "spearman", 65.90, _ALBERT_SBERT),
    Anchor("cnsd-stsb", "test", "text2vec-base-chinese", "spearman", 79.30, _TEXT2VEC),
    Anchor("c3", "test", "ALBERT-tiny (fine-tuned)", "accuracy", 50.26, _CLUE),
    Anchor("c3", "test", "ALBERT-base (fine-tuned)", "accuracy", 59.58, _CLUE),
    Anchor("c3", "test", "BERT-base (fine-tuned)", "accuracy", 64.50, _CLUE),
    Anchor("chid", "test", "ALBERT-tiny (fine-tuned on the full CHID train set)", "accuracy", 43.50, _CLUE),
    Anchor("korquad", "dev", "KoBERT (fine-tuned on the 60k-question train set)", "f1", 80.27, _KOBERT_KORQUAD),
    Anchor("cmrc2018", "dev", "albert_tiny_zh (fine-tuned on the 10k-question train set)", "f1", 73.95,
           _ALBERT_ZH),
)
