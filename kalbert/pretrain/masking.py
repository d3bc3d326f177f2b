"""Dynamic masking: a fresh MLM mask for every instance each time it is drawn.

Follows ALBERT's n-gram masking: the sequence is cut into units (whole words, whole morphemes or
single tokens, from the flags ``data build`` stored); units are visited in random order and each
starts a span of n consecutive units with p(n) ∝ 1/n, n <= 3, until 15% of the tokens (at most
``max_predictions``) are chosen. A span never crosses [SEP] and special tokens or padding are never
chosen. Each chosen token becomes [MASK] (80%), a random piece (10%) or stays (10%).

The randomness of an instance's mask comes from ``(seed, epoch, instance index)`` alone, so a
resumed run, or the same global batch split over any number of processes, masks identically. torch is
imported on use: :class:`MaskingConfig` is part of the pretraining config, which `kalbert pretrain --help` reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from kalbert.errors import KalbertError
from kalbert.pretrain.instances import Instance
from kalbert.pretrain.tokens import MORPHEME_START, WORD_START
from kalbert.vocab.files import MASK_ID, PAD_ID, SPECIAL_TOKENS

if TYPE_CHECKING:
    import torch


class SpanQuestionMaker(Protocol):
    """Span selection as :func:`collate` sees it: :class:`kalbert.pretrain.rss.RecurringSpans`, which builds on
    this module (so it is not imported here); ``questions`` returns its ``SpanQuestions``."""

    def questions(self, instance: Instance, rng: np.random.Generator) -> Any: ...


IGNORE = -100
FIRST_ORDINARY_ID = len(SPECIAL_TOKENS)
_UNIT_BITS = {"word": WORD_START, "morpheme": MORPHEME_START}


@dataclass
class MaskingConfig:
    """How tokens are chosen and replaced for the MLM objective."""

    mask_prob: float = 0.15
    """share of the (non-special) tokens to predict"""
    max_predictions: int = 20
    """at most this many predicted tokens per instance (ALBERT: 20 at length 128)"""
    max_ngram: int = 3
    """longest span, in units; span length n is drawn with p(n) ∝ 1/n"""
    mask_unit: Literal["morpheme", "word", "token"] = "morpheme"
    """what a span is made of: "word" (whitespace word), "morpheme" (analyzer unit) or "token\""""
    mask_token_prob: float = 0.8
    """chosen tokens replaced by [MASK]"""
    random_token_prob: float = 0.1
    """chosen tokens replaced by a random piece (the rest stay as they are)"""

    def validate(self) -> None:
        if self.mask_unit not in (*_UNIT_BITS, "token"):
            raise KalbertError(f"unknown masking unit {self.mask_unit!r}", "use word, morpheme or token")
        if not 0 < self.mask_prob < 1 or self.max_predictions < 1 or self.max_ngram < 1:
            raise KalbertError("masking needs 0 < mask_prob < 1, max_predictions >= 1 and max_ngram >= 1")
        if self.mask_token_prob + self.random_token_prob > 1:
            raise KalbertError("mask_token_prob + random_token_prob must not exceed 1")


def unit_bounds(ids: np.ndarray, flags: np.ndarray, unit: str, excluded: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) of every maskable unit; specials, padding and ``excluded`` tokens break units."""
    candidate = ids >= FIRST_ORDINARY_ID
    if excluded is not None:
        candidate &= ~excluded
    after_break = np.concatenate([[True], ~candidate[:-1]])
    opens = flags & _UNIT_BITS[unit] > 0 if unit in _UNIT_BITS else np.ones_like(candidate)
    is_start = candidate & (opens | after_break)
    starts = np.flatnonzero(is_start)
    breaks = np.flatnonzero(is_start | ~candidate)
    breaks = np.append(breaks, len(ids))
    ends = breaks[np.searchsorted(breaks, starts, side="right")]
    return starts, ends


def mask_instance(ids: np.ndarray, flags: np.ndarray, config: MaskingConfig, vocab_size: int,
                  rng: np.random.Generator, unmaskable: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The masked ids and the labels (the original id where predicted, else -100); ``unmaskable`` tokens (the
    answers of span-selection questions) are neither chosen nor counted in the budget."""
    starts, ends = unit_bounds(ids, flags, config.mask_unit, unmaskable)
    labels = np.full(len(ids), IGNORE, dtype=np.int64)
    n_tokens = int(np.sum(ends - starts))
    if n_tokens == 0:
        return ids.copy(), labels
    budget = min(config.max_predictions, max(1, round(n_tokens * config.mask_prob)))
    inverse = 1.0 / np.arange(1, config.max_ngram + 1)
    cumulative = [np.cumsum(inverse[:n]) / inverse[:n].sum() for n in range(1, config.max_ngram + 1)]
    # how many units, from each unit on, are contiguous (no special token between them)
    contiguous = np.ones(len(starts), dtype=np.int64)
    for k in range(len(starts) - 2, -1, -1):
        if ends[k] == starts[k + 1]:
            contiguous[k] = contiguous[k + 1] + 1
    covered = np.zeros(len(ids), dtype=bool)
    chosen = 0
    draws = rng.random(len(starts))
    for unit in rng.permutation(len(starts)):
        if chosen >= budget:
            break
        available = int(min(config.max_ngram, contiguous[unit]))
        n = int(np.searchsorted(cumulative[available - 1], draws[unit], side="right")) + 1
        while n > 1 and chosen + ends[unit + n - 1] - starts[unit] > budget:
            n -= 1
        begin, end = starts[unit], ends[unit + n - 1]
        if chosen + end - begin > budget or covered[begin:end].any():
            continue
        covered[begin:end] = True
        chosen += end - begin
    positions = np.flatnonzero(covered)
    labels[positions] = ids[positions]
    masked = ids.copy()
    roll = rng.random(len(positions))
    to_mask = roll < config.mask_token_prob
    to_random = (roll >= config.mask_token_prob) & (roll < config.mask_token_prob + config.random_token_prob)
    masked[positions[to_mask]] = MASK_ID
    masked[positions[to_random]] = rng.integers(FIRST_ORDINARY_ID, vocab_size, int(to_random.sum()))
    return masked, labels


def collate(examples: list[Instance], indices: list[int], mask_key: tuple[int, ...], config: MaskingConfig,
            vocab_size: int, rss: SpanQuestionMaker | None = None) -> dict[str, torch.Tensor]:
    """Pad ``examples`` to the longest and mask each from the seed ``(*mask_key, index)``; a batch of tensors.

    The trainer's key is ``(seed, 0, epoch)`` for training and ``(seed, 1, 0)`` for evaluation, whose
    masks are thus the same at every evaluation. With ``rss``, each instance first gets its span-selection
    questions (from the same generator) and the batch their targets (``rss_starts``, ``rss_ends``).
    """
    import torch

    rows = []
    for example, index in zip(examples, indices, strict=True):
        rng = np.random.default_rng((*mask_key, index))
        questions = rss.questions(example, rng) if rss is not None else None
        if questions is not None:
            example = questions.instance
        masked = mask_instance(example.ids, example.flags, config, vocab_size, rng,
                               None if questions is None else questions.answers())
        rows.append((example, masked, questions))
    width = max(len(example.ids) for example, _, _ in rows)
    shape = (len(examples), width)
    input_ids = np.full(shape, PAD_ID, dtype=np.int64)
    labels = np.full(shape, IGNORE, dtype=np.int64)
    token_type_ids = np.zeros(shape, dtype=np.int64)
    attention_mask = np.zeros(shape, dtype=np.int64)
    rss_starts, rss_ends = np.full(shape, IGNORE, dtype=np.int64), np.full(shape, IGNORE, dtype=np.int64)
    for row, (example, (ids, row_labels), questions) in enumerate(rows):
        length = len(example.ids)
        input_ids[row, :length], labels[row, :length] = ids, row_labels
        token_type_ids[row, example.length_a + 2:length] = 1
        attention_mask[row, :length] = 1
        if questions is not None:
            rss_starts[row, questions.slots], rss_ends[row, questions.slots] = questions.starts, questions.ends
    batch = {
        "input_ids": torch.from_numpy(input_ids),
        "token_type_ids": torch.from_numpy(token_type_ids),
        "attention_mask": torch.from_numpy(attention_mask),
        "labels": torch.from_numpy(labels),
        "sop_labels": torch.tensor([e.label for e in examples], dtype=torch.long),
    }
    if rss is not None:
        batch["rss_starts"], batch["rss_ends"] = torch.from_numpy(rss_starts), torch.from_numpy(rss_ends)
    return batch
