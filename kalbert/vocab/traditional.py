"""Traditional -> Simplified, one character at a time, from OpenCC's tables: what a vocabulary's normalizer maps.

kalbert's Chinese pieces were learned on Simplified text, so a Traditional character (DRCD, zh-TW, zh-HK) is
often ``<unk>``. A character-level map inside the normalizer lets every model on the vocabulary read it with no
OpenCC call at run time. Only single-character mappings are taken (a charsmap cannot see phrases), each the
character OpenCC itself writes for that character alone: ``t2s`` first, then the Taiwan and Hong Kong variant
tables (``tw2s``, ``hk2s``) for the characters ``t2s`` keeps.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from sentencepiece import sentencepiece_model_pb2 as sp_pb2

from kalbert.errors import KalbertError
from kalbert.vocab.normalizer import alphabet, charsmap_sha256, compose_charsmap, with_charsmap

Scope = Literal["unknown", "all"]
SCOPES: tuple[Scope, ...] = ("unknown", "all")
""""unknown": map only characters the vocabulary has no piece for, so text it could already read keeps its
ids; "all": map every Traditional character, also those it has (Korean Hanja such as 國), whose ids change."""

_CONVERSIONS = ("t2s", "tw2s", "hk2s")
_HAN_BLOCKS = (
    (0x3400, 0x4DC0),  # CJK Extension A
    (0x4E00, 0xA000),  # CJK Unified Ideographs
    (0xF900, 0xFB00),  # CJK Compatibility Ideographs
    (0x20000, 0x2FA20),  # Extensions B-F and the compatibility supplement
)


_TRADITIONAL_IN_GB2312 = frozenset("後於")
"""GB 2312 characters that Simplified text writes as 后 and 于: 28 in 7.7M characters of zh-clue, 1,357 in the
160k of the DRCD test contexts. Mapped like any Traditional character (only with scope "all": every
Simplified vocabulary has a piece for them)."""


def opencc_version() -> str:
    import opencc

    return opencc.__version__


def is_simplified_standard(char: str) -> bool:
    """True for GB 2312 characters but 後 and 於: Simplified text holds them (著作, 乾隆, 什么), so they are never
    remapped."""
    return len(char.encode("gb2312", errors="ignore")) == 2 and char not in _TRADITIONAL_IN_GB2312


@cache
def opencc_character_map() -> dict[str, str]:
    """Every Han character that OpenCC, converting it alone, turns into one other character (about 5,100),
    GB 2312 characters left out. Built in about three seconds from the installed opencc's own tables."""
    import opencc

    converters = [opencc.OpenCC(name) for name in _CONVERSIONS]
    mapping: dict[str, str] = {}
    for start, stop in _HAN_BLOCKS:
        for codepoint in range(start, stop):
            char = chr(codepoint)
            if is_simplified_standard(char):
                continue
            simplified = next((out for out in (c.convert(char) for c in converters) if out != char), char)
            if len(simplified) == 1 and simplified != char:
                mapping[char] = simplified
    return mapping


def traditional_map(alphabet: set[str], scope: Scope) -> dict[str, str]:
    """The part of :func:`opencc_character_map` that helps a vocabulary whose pieces use ``alphabet``: the
    Simplified character must have a piece, and with scope "unknown" the Traditional one must not."""
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}")
    return {
        char: simplified
        for char, simplified in opencc_character_map().items()
        if simplified in alphabet and (scope == "all" or char not in alphabet)
    }


def add_traditional_map(proto: sp_pb2.ModelProto, scope: Scope) -> tuple[sp_pb2.ModelProto, dict[str, Any]]:
    """``proto`` with the Traditional map of ``scope`` composed into its normalizer (pieces and ids untouched),
    and the ``normalizer`` block its record keeps."""
    mapping = traditional_map(alphabet(proto), scope)
    old = proto.normalizer_spec.precompiled_charsmap
    new = compose_charsmap(proto, mapping)
    if new == old:
        raise KalbertError("the vocabulary already reads every Traditional character it can "
                           f"(scope {scope!r}); nothing to change")
    record = {
        "traditional_to_simplified": scope,
        "opencc_version": opencc_version(),
        "opencc_conversions": list(_CONVERSIONS),
        "characters_mapped": len(mapping),
        "charsmap_sha256": charsmap_sha256(new),
        "parent_charsmap_sha256": charsmap_sha256(old),
    }
    return with_charsmap(proto, new), record


def describe_normalizer(base: str, normalizer: dict[str, Any]) -> str:
    """The record's one-line ``normalization``: the parent's, plus the map."""
    return (f"{base}; then Traditional -> Simplified for {normalizer['characters_mapped']:,} characters "
            f"(opencc {normalizer['opencc_version']}, scope {normalizer['traditional_to_simplified']})")
