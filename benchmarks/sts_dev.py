"""Zero-shot STS on the dev splits, shared by the benchmark scripts that compare encoders before any STS training.

Spearman x100 between the cosine of two sentences' embeddings and the gold score, on KorSTS dev and
stsb-zh dev (dev splits only: the test splits are what results tables report after training).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kalbert.bench.metrics import paired_cosine, spearman
from kalbert.data import load_sts
from kalbert.sentence.encoder import unique_rows

SETS = (("korsts", "dev", "KorSTS dev"), ("stsb-zh", "dev", "stsb-zh dev"))


def load_pairs(max_pairs: int = 0) -> dict[str, list]:
    """The pairs of each dev set by label; ``max_pairs`` > 0 keeps the first N (quick checks)."""
    pairs = {label: load_sts(name, split) for name, split, label in SETS}
    return {label: rows[:max_pairs] if max_pairs > 0 else rows for label, rows in pairs.items()}


def score(embed: Callable[[list[str]], np.ndarray], pairs: dict[str, list]) -> dict[str, float | None]:
    """Spearman x100 of cosine vs gold, per data set; ``embed`` maps a list of sentences to rows."""
    scores = {}
    for label, rows in pairs.items():
        a = unique_rows(embed, [p.sentence1 for p in rows])
        b = unique_rows(embed, [p.sentence2 for p in rows])
        scores[label] = spearman(paired_cosine(a, b), [p.score for p in rows])
    return scores
