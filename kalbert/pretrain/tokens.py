"""Sentences -> token ids plus per-token unit-start flags, for whole-word/whole-morpheme masking.

Tokens come from the plain SentencePiece model, exactly as at inference. The flags
come from the analyzer: a token starts a *word* when it opens a whitespace word (its piece starts
with ``▁``), and starts a *morpheme* when it opens a word or begins at an analyzer boundary inside
one (mecab-ko morphemes, jieba words). ALBERT's own rule treats every Hangul/Han piece as a word;
these flags let masking hide ``▁연기`` + ``도`` or a multi-piece noun as one unit instead.
"""

from __future__ import annotations

import numpy as np
import sentencepiece as spm

from kalbert.text.segment import Segmenter

WORD_START = np.uint8(1)
MORPHEME_START = np.uint8(2)
WORD_MARK = "\u2581"  # "▁"


def morpheme_boundaries(words: list[list[str]]) -> set[int]:
    """Character offsets, in the single-spaced sentence, where a morpheme starts inside a word."""
    offsets: set[int] = set()
    position = 0
    for pieces in words:
        for piece in pieces[:-1]:
            position += len(piece)
            offsets.add(position)
        position += len(pieces[-1]) + 1  # the word's last piece and the space after it
    return offsets


def encode_sentences(sentences: list[str], processor: spm.SentencePieceProcessor,
                     segmenter: Segmenter) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each normalised sentence, its ids (int32) and flags (uint8: WORD_START | MORPHEME_START)."""
    if not sentences:
        return []
    encoded = processor.encode(sentences, return_type="offset_mapping")
    analyses = segmenter.split_words(sentences)  # independent of batching: same flags for any task size
    out = []
    for enc, words in zip(encoded, analyses, strict=True):
        boundaries = morpheme_boundaries(words)
        flags = np.zeros(len(enc["ids"]), dtype=np.uint8)
        for i, (piece, (begin, _)) in enumerate(zip(enc["pieces"], enc["offsets"], strict=True)):
            if piece.startswith(WORD_MARK) or i == 0:
                flags[i] = WORD_START | MORPHEME_START
            elif begin in boundaries:
                flags[i] = MORPHEME_START
        out.append((np.asarray(enc["ids"], dtype=np.int32), flags))
    return out
