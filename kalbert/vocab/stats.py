"""Measured qualities of a vocabulary on evaluation text (for cards, `vocab inspect` and benchmarks)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import sentencepiece as spm

from kalbert.text.normalize import normalize_text
from kalbert.text.segment import Segmenter


@dataclass
class VocabStats:
    """Rates over ``sentences`` evaluation sentences; all shares are in [0, 1]."""

    sentences: int
    characters: int
    words: int
    pieces: int
    unk_rate: float
    """share of pieces that are <unk>"""
    char_coverage: float
    """share of non-space characters not swallowed by an <unk> piece"""
    pieces_per_word: float
    """pieces per whitespace word (fertility)"""
    pieces_per_char: float
    boundary_crossing: float | None
    """share of pieces that straddle a morpheme/word boundary of the analyzer (None without one)"""
    roundtrip_failures: int
    """sentences where decode(encode(x)) differs from the normalised x"""
    roundtrip_examples: list[str]

    def as_dict(self) -> dict:
        return asdict(self)


def _char_offsets(text: str) -> list[int]:
    """Map UTF-8 byte offsets to character offsets (index: byte offset)."""
    offsets = []
    for index, char in enumerate(text):
        offsets.extend([index] * len(char.encode("utf-8")))
    offsets.append(len(text))
    return offsets


def measure_vocab(
    processor: spm.SentencePieceProcessor, sentences: list[str], segmenter: Segmenter | None = None
) -> VocabStats:
    """Encode each sentence once and count UNKs, fertility, boundary crossings and round trips."""
    texts = [t for t in (normalize_text(s) for s in sentences) if t]
    unk_id = processor.unk_id()
    pieces = unks = unk_chars = words = chars = crossing = failures = 0
    examples: list[str] = []
    analyzed = segmenter is not None and segmenter.enabled
    for text in texts:
        proto = processor.encode(text, return_type="proto")
        to_char = _char_offsets(text)
        boundaries = segmenter.boundaries(text) if analyzed else set()
        words += len(text.split())
        chars += sum(1 for c in text if not c.isspace())
        for piece in proto.pieces:
            if not piece.surface.strip():
                continue  # a lone "▁" carries no text
            pieces += 1
            begin, end = to_char[piece.begin], to_char[piece.end]
            if piece.id == unk_id:
                unks += 1
                unk_chars += end - begin
            if any(begin < b < end for b in boundaries):
                crossing += 1
        if processor.decode([p.id for p in proto.pieces]) != text:
            failures += 1
            if len(examples) < 5:
                examples.append(text)
    return VocabStats(
        sentences=len(texts),
        characters=chars,
        words=words,
        pieces=pieces,
        unk_rate=unks / max(pieces, 1),
        char_coverage=1 - unk_chars / max(chars, 1),
        pieces_per_word=pieces / max(words, 1),
        pieces_per_char=pieces / max(chars, 1),
        boundary_crossing=crossing / max(pieces, 1) if analyzed else None,
        roundtrip_failures=failures,
        roundtrip_examples=examples,
    )
