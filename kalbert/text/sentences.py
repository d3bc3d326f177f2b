"""Sentence splitting for Korean and Chinese paragraphs.

Rule-based on purpose: end punctuation (. ! ? … for Korean, 。！？； for Chinese) closes a
sentence, together with any closing quotes/brackets after it. A Latin full stop only ends a
sentence when whitespace follows, so "3.14" and "www.naver.com" stay whole.
"""

from __future__ import annotations

import re

_CLOSERS = re.escape("\"'”’」』)）]》〉")
_SENTENCE_END = re.compile(
    rf"(?:[.!?…]+[{_CLOSERS}]*(?=\s)|[。！？；!?]+[{_CLOSERS}]*)\s*"
)


def split_sentences(paragraph: str, min_chars: int = 2) -> list[str]:
    """Split one paragraph into sentences; pieces shorter than ``min_chars`` join their neighbour."""
    sentences: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(paragraph):
        piece = paragraph[start : match.end()].strip()
        start = match.end()
        if not piece:
            continue
        if sentences and len(piece) < min_chars:
            sentences[-1] = f"{sentences[-1]} {piece}".strip()
        else:
            sentences.append(piece)
    tail = paragraph[start:].strip()
    if tail:
        if sentences and len(tail) < min_chars:
            sentences[-1] = f"{sentences[-1]} {tail}"
        else:
            sentences.append(tail)
    return sentences
