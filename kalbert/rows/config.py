"""The settings of training rows, apart from the code that makes them (which reads data and loads teachers), so
that a verb's --help and input checks come first.

Every verb that trains on rows nests one as ``rows``; its settings are flags and config keys of their own
(``--negative-miner``, ``negative_miner: ...``; :mod:`kalbert.config`), named alike in every verb.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

PairLoss = Literal["mnrl", "graded"]
CORPUS_ROWS = 2000
"""rows a corpus gives by default (every paragraph of kowiki would take a teacher ten hours to encode)"""


@dataclass
class RowsConfig:
    """How training references become rows: paraphrase pairs, corpus rows, mined negatives, teacher scores."""

    pair_loss: PairLoss = "mnrl"
    """How paraphrase-pair sets (AFQMC, ATEC, PAWS-X) train: mnrl (their paraphrases, with in-batch
    negatives) or graded (every pair, scored 1 or 0, with the graded-pair loss: their non-paraphrases are questions
    that share most words yet ask something else, the hard negatives in-batch sampling never finds)."""
    negative_miner: str | None = None
    """Teacher that picks each question's hard negative (e.g. multilingual-e5-small, with its prompts): the passage
    of the same split it ranks highest, skipping any it scores at or above ``negative_margin`` x the question's own
    passage (likely answers too); None: the next paragraph of the same article (QA sets), or none."""
    negative_margin: float = 0.99
    """Share of the miner's score for a question's own passage that a mined negative must stay under (0.99 fits
    e5's crowded cosines; 1.0 is GISTEmbed's rule: only passages scored above the question's own are passed over)."""
    score_teacher: str | None = None
    """Teacher whose scores the question -> passage rows also distil (e.g. multilingual-e5-small, with its prompts):
    the student matches its softmax over every passage of the batch (KL at ``score_temperature``) beside the
    in-batch cross-entropy, so it learns how close each near miss is, not only which passage is right; None:
    in-batch negatives only."""
    score_temperature: float = 0.01
    """Temperature of the ``score_teacher``'s cosines (0.01 spreads e5's crowded scores: its own paragraph
    typically 0.02-0.03 above the best other)."""
    corpus_rows: int = CORPUS_ROWS
    """Rows a corpus in the training sets gives (a sentence against the rest of its paragraph, the inverse cloze
    task), sampled as corpus distillation samples paragraphs; a verb's --max-rows, where it has one, caps them too."""
    repeat: list[str] = field(default_factory=list)
    """Training sets whose rows an epoch holds more than once, as SET=N (e.g. answers-ko=3): a small set weighs more
    among the batches without capping the others; the rows --max-rows keeps are the ones repeated."""
