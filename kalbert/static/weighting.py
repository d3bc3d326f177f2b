"""Frequency weights of vocabulary pieces: frequent pieces (particles, punctuation) say little about a
sentence, so their vectors count less in its average.

SIF (Arora et al., 2017) weighs a piece by ``a / (a + p(piece))``. A unigram SentencePiece model
already holds each piece's log-probability as its score, a better estimate of ``p`` than the Zipf
law model2vec applies to a piece's rank (offered as ``zipf`` for comparison).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from sentencepiece import sentencepiece_model_pb2 as sp_pb2

from kalbert.vocab.files import load_model_proto

Weighting = Literal["sif", "zipf", "none"]
NORMAL = sp_pb2.ModelProto.SentencePiece.NORMAL


def ordinary_pieces(proto: sp_pb2.ModelProto) -> np.ndarray:
    """True for pieces that stand for text; False for <pad>, <unk>, [CLS], [SEP], [MASK] and the like."""
    return np.array([piece.type == NORMAL for piece in proto.pieces])


def piece_probabilities(proto: sp_pb2.ModelProto, weighting: Weighting) -> np.ndarray:
    """p(piece) over the ordinary pieces (0 for the others): exp(score) normalised, or Zipf by score rank."""
    ordinary = ordinary_pieces(proto)
    scores = np.array([piece.score for piece in proto.pieces], dtype=np.float64)
    raw = np.zeros(len(scores))
    if weighting == "sif":
        raw[ordinary] = np.exp(scores[ordinary] - scores[ordinary].max())
    else:
        ranks = np.empty(int(ordinary.sum()))
        ranks[np.argsort(-scores[ordinary], kind="stable")] = np.arange(1, len(ranks) + 1)
        raw[ordinary] = 1.0 / ranks
    return raw / raw.sum()


def piece_weights(spiece: str | Path, weighting: Weighting, sif_a: float) -> np.ndarray:
    """float32 weight per piece id: ``sif_a / (sif_a + p)`` for sif and zipf, 1 for none."""
    proto = load_model_proto(spiece)
    if weighting == "none":
        return np.ones(len(proto.pieces), dtype=np.float32)
    return (sif_a / (sif_a + piece_probabilities(proto, weighting))).astype(np.float32)
