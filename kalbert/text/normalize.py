"""Normalisation that never destroys Hangul.

NFC (composes decomposed jamo into syllables) instead of NFKC/NFKD: no accent stripping, no
lower-casing, no full-width -> half-width folding (that would break decode(encode(x)) == x for
Chinese punctuation). Only invisible damage is repaired: control characters, zero-width marks,
exotic spaces and runs of whitespace.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad"


@functools.cache
def _table() -> dict[int, str | None]:
    """The translation table, built on first use: it walks every code point (0.4 s), which a command that only
    checks its input before refusing it should not pay at import."""
    table: dict[int, str | None] = {ord(c): None for c in _ZERO_WIDTH}
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        category = unicodedata.category(ch)
        if category == "Zs" or ch in "\t\n\r\x0b\x0c\u2028\u2029\x85":
            table[cp] = " "
        elif category == "Cc":
            table[cp] = None
    table[ord(" ")] = " "
    return table


_SPACES = re.compile(r" {2,}")


def normalize_text(text: str) -> str:
    """Return ``text`` in NFC with control/zero-width characters removed and whitespace collapsed."""
    text = unicodedata.normalize("NFC", text).translate(_table())
    return _SPACES.sub(" ", text).strip()


def space_characters() -> list[str]:
    """Every character :func:`normalize_text` maps to a plain space (used for the SentencePiece rules)."""
    return [chr(cp) for cp, repl in _table().items() if repl == " " and cp != ord(" ")]


def removed_characters() -> list[str]:
    """Every character :func:`normalize_text` deletes."""
    return [chr(cp) for cp, repl in _table().items() if repl is None]
