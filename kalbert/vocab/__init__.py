"""Morphology-aware SentencePiece vocabularies: build, extend, inspect."""

from kalbert.vocab.build import build_vocab
from kalbert.vocab.config import VocabBuildConfig, VocabExtendConfig
from kalbert.vocab.extend import extend_vocab, grow_embeddings
from kalbert.vocab.files import load_processor
from kalbert.vocab.stats import VocabStats, measure_vocab

__all__ = [
    "VocabBuildConfig",
    "VocabExtendConfig",
    "VocabStats",
    "build_vocab",
    "extend_vocab",
    "grow_embeddings",
    "load_processor",
    "measure_vocab",
]
