"""Sentences -> token ids plus per-token unit-start flags, for whole-word/whole-morpheme masking.

Tokens come from the plain SentencePiece model, exactly as at inference (DESIGN §2). The flags
come from the analyzer: a token starts a *word* when it opens a whitespace word (its piece starts
with ``▁``), and starts a *morpheme* when it opens a word or begins at an analyzer boundary inside
one (mecab-ko morphemes, jieba words). ALBERT's own rule treats every Hangul/Han piece as a word;
these flags let masking hide ``▁연기`` + ``도`` or a multi-piece noun as one unit instead.
"""

from __future__ import annotations

import re

import numpy as np
import sentencepiece as spm

from kalbert.text.segment import Segmenter

WORD_START = np.uint8(1)
MORPHEME_START = np.uint8(2)
_WORD_MARK = "\u2581"  # "▁"
_SCRIPT_RUNS = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]+|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"
                          r"|[^\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_CACHE_LIMIT = 500_000


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


class WordAnalyzer:
    """Morphemes of whitespace words, each script run analysed on its own.

    The segmenter analyses a batch of words as one mecab lattice, so a run's morphemes can depend on
    the runs batched with it (and on set order, i.e. the hash seed). Handing it one Hangul/Han run at a
    time makes the flags a function of the text alone: the same for any task size, process count or run.
    """

    def __init__(self, segmenter: Segmenter) -> None:
        self.segmenter = segmenter
        self._words: dict[str, list[str]] = {}

    def pieces(self, word: str) -> list[str]:
        if word not in self._words:
            if len(self._words) >= _CACHE_LIMIT:
                self._words.clear()
            self._words[word] = [piece for run in _SCRIPT_RUNS.findall(word)
                                 for piece in self.segmenter.split_words([run])[0][0]]
        return self._words[word]


def encode_sentences(sentences: list[str], processor: spm.SentencePieceProcessor,
                     analyzer: WordAnalyzer) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each normalised sentence, its ids (int32) and flags (uint8: WORD_START | MORPHEME_START)."""
    if not sentences:
        return []
    encoded = processor.encode(sentences, return_type="offset_mapping")
    out = []
    for sentence, enc in zip(sentences, encoded, strict=True):
        boundaries = morpheme_boundaries([analyzer.pieces(word) for word in sentence.split()])
        flags = np.zeros(len(enc["ids"]), dtype=np.uint8)
        for i, (piece, (begin, _)) in enumerate(zip(enc["pieces"], enc["offsets"], strict=True)):
            if piece.startswith(_WORD_MARK) or i == 0:
                flags[i] = WORD_START | MORPHEME_START
            elif begin in boundaries:
                flags[i] = MORPHEME_START
        out.append((np.asarray(enc["ids"], dtype=np.int32), flags))
    return out
