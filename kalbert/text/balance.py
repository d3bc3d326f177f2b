"""How a sentence budget is shared among languages: the temperature rule of multilingual sampling."""

from __future__ import annotations

import math


def temperature_quotas(counts: dict[str, int], total: int, temperature: float) -> dict[str, int]:
    """Share ``total`` among languages in proportion to n ** (1/T), never more than a language has.

    T = 1 keeps the natural proportions; larger T moves towards equal shares, so a small language is
    not drowned by a large one.
    """
    weights = {lang: n ** (1 / temperature) for lang, n in counts.items()}
    return {lang: min(counts[lang], math.ceil(total * weights[lang] / sum(weights.values()))) for lang in counts}
