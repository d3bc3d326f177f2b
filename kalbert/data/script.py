"""Traditional -> Simplified Chinese with OpenCC's ``t2s`` (PyPI ``opencc``), for DRCD.

kalbert's Chinese vocabularies and corpora are Simplified; DRCD is published in Traditional script. The
conversion is character and phrase substitution that keeps every string's length on DRCD (checked on all
2,000 contexts and 14,034 answers), so answer offsets stay valid; :func:`to_simplified` is still safe on
any text.
"""

from __future__ import annotations

from functools import cache

TRADITIONAL = frozenset({"drcd"})
"""registered data sets written in Traditional script"""
T2S = "Traditional -> Simplified, opencc t2s"
"""how a converted data set is named in records: ``drcd (Traditional -> Simplified, opencc t2s)``"""


@cache
def _converter():
    import opencc

    return opencc.OpenCC("t2s")


def to_simplified(text: str) -> str:
    return _converter().convert(text)


def reads_simplified(name: str, languages: list[str]) -> bool:
    """Whether a model of ``languages`` reads ``name`` converted to Simplified (a Traditional set, a zh model)."""
    return name in TRADITIONAL and "zh" in languages


def read_as(name: str, simplified: bool) -> str:
    """A data set's name as records show it: with the conversion when one was made."""
    return f"{name} ({T2S})" if simplified and name in TRADITIONAL else name
