"""Recurring span selection (RSS): span-pointing questions made from unlabelled instances.

Splinter (Ram et al. 2021) pretrains an encoder for extractive QA without labels: a span that occurs
more than once in a passage is kept at one place and replaced by a question token at the others, and
from each question token's state the model points at the start and the end of the kept occurrence.
``kalbert pretrain --objective mlm+rss`` adds that task to MLM, per instance (the passage is the whole
``[CLS] A [SEP] B [SEP]``), each time the instance is drawn:

- candidates are runs of 1..``max_span`` pieces made of whole masking units (``--mask-unit``: morphemes
  by default, so ``▁서울`` recurs in ``▁서울 은`` and ``▁서울 이``), never across a special token; they
  are found by growing recurring runs one unit at a time, so the work follows the recurring text only;
- a unit is trivial when it has no letters (punctuation, digits, symbols, the bare word mark) or is a single
  piece among the ``COMMON_PIECES`` most frequent (kalbert vocabularies list pieces most frequent first, so
  ids 5..104: particles, endings, ``▁``; a unit of several such pieces, like ``▁국 선``, is a word). A run
  neither starts nor ends with a trivial unit, so no answer trails a comma or opens on a particle, and no run
  is trivial throughout;
- runs are taken longest first (equal lengths in a random order), and a run is taken only if none of its
  occurrences overlaps another or text already taken: the answer is then the one visible copy, and a
  shorter run inside a taken one is never asked about;
- one occurrence (at random) is kept; every other one becomes a single [MASK], so the instance gets
  shorter. At most ``max_questions`` slots per instance (Splinter: 30); a run that does not fit is skipped.

The question token is [MASK]: the vocabulary contract has no free special id, and a slot asks "what is
here" as an MLM mask does. The objective knows which [MASK]s are questions (per-token targets), and the
kept occurrences are left out of MLM masking so every answer stays readable; MLM then masks the other
tokens at the usual rate. SOP is not part of ``mlm+rss``: span selection takes the place of the sentence-
level task (Splinter has no NSP either), so a run against ``mlm+sop`` at the same token budget measures that one swap,
and the slots cut text out of A or B, which would change what order prediction sees.

Everything is drawn from the instance's masking generator (RSS first, then MLM), so a resumed run and any
split of the batch over processes ask the same questions, and held-out questions are fixed.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sentencepiece as spm

from kalbert.pretrain.instances import FLAGS_SPECIAL, Instance
from kalbert.pretrain.masking import FIRST_ORDINARY_ID, unit_bounds
from kalbert.pretrain.tokens import WORD_MARK
from kalbert.vocab.files import MASK_ID, SPIECE

COMMON_PIECES = 100
"""the most frequent pieces (after the specials) that do not make a question on their own"""
RSS_TARGETS = ("rss_starts", "rss_ends")
"""batch keys: per token, a question slot's answer start / end (inclusive) position, else -100"""

Occurrences = list[tuple[int, int]]
"""where one run occurs: (begin, end exclusive) token positions"""


def trivial_pieces(vocab_dir: Path, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per id, whether the piece is among the most common, and whether it has no letters (module docstring)."""
    processor = spm.SentencePieceProcessor(model_file=str(Path(vocab_dir) / SPIECE))
    size = max(vocab_size, processor.get_piece_size())
    common, letterless = np.zeros(size, dtype=bool), np.zeros(size, dtype=bool)
    common[:FIRST_ORDINARY_ID + COMMON_PIECES] = True
    for i in range(FIRST_ORDINARY_ID, processor.get_piece_size()):
        text = processor.id_to_piece(i).replace(WORD_MARK, "")
        letterless[i] = all(unicodedata.category(c)[0] in "PNSZ" for c in text)
    return common, letterless


@dataclass
class SpanQuestions:
    """An instance whose recurring runs became question slots, and the answer of every slot."""

    instance: Instance
    slots: np.ndarray
    """positions of the question [MASK]s"""
    starts: np.ndarray
    """per slot, the first position of the kept occurrence"""
    ends: np.ndarray
    """per slot, its last position (inclusive)"""

    def answers(self) -> np.ndarray:
        """Per token, whether it belongs to a kept occurrence (MLM leaves these alone)."""
        inside = np.zeros(len(self.instance.ids), dtype=bool)
        for start, end in zip(self.starts.tolist(), self.ends.tolist(), strict=True):
            inside[start:end + 1] = True
        return inside


@dataclass
class RecurringSpans:
    """How instances get their questions: the piece tables of ``trivial_pieces``, the caps and the unit spans
    are made of."""

    common: np.ndarray
    letterless: np.ndarray
    max_questions: int = 30
    max_span: int = 10
    unit: str = "morpheme"

    def recurring(self, instance: Instance) -> list[Occurrences]:
        """Every run of whole units (at most ``max_span`` pieces, no trivial unit at either end) that occurs at
        least twice, as the occurrences' positions in order."""
        tokens = instance.ids.tolist()
        starts, ends = (b.tolist() for b in unit_bounds(instance.ids, instance.flags, self.unit))
        n = len(starts)
        trivial = [bool(e - b == 1 and self.common[tokens[b]] or self.letterless[instance.ids[b:e]].all())
                   for b, e in zip(starts, ends, strict=True)]
        frontier: dict[tuple[int, ...], list[int]] = defaultdict(list)  # run -> first units of its occurrences
        for u in range(n):
            if ends[u] - starts[u] <= self.max_span:
                frontier[tuple(tokens[starts[u]:ends[u]])].append(u)
        found: list[Occurrences] = []
        size = 1  # units per run
        while frontier:
            grown: dict[tuple[int, ...], list[int]] = defaultdict(list)
            for run, firsts in frontier.items():
                if len(firsts) < 2:
                    continue
                if not (trivial[firsts[0]] or trivial[firsts[0] + size - 1]):
                    found.append([(starts[u], ends[u + size - 1]) for u in firsts])
                for u in firsts:
                    after = u + size
                    if after < n and ends[after - 1] == starts[after] and ends[after] - starts[u] <= self.max_span:
                        grown[run + tuple(tokens[starts[after]:ends[after]])].append(u)
            frontier, size = grown, size + 1
        return found

    def questions(self, instance: Instance, rng: np.random.Generator) -> SpanQuestions:
        """``instance`` with question slots in place of recurring runs (possibly none)."""
        groups = self.recurring(instance)
        order = sorted(rng.permutation(len(groups)).tolist(), key=lambda g: groups[g][0][0] - groups[g][0][1])
        taken = np.zeros(len(instance.ids), dtype=bool)
        kept: Occurrences = []
        asked: list[tuple[int, int]] = []  # (first position of a replaced occurrence, index in kept)
        room = self.max_questions
        for g in order:
            occurrences = groups[g]
            if len(occurrences) - 1 > room:
                continue
            overlapping = any(b < e for (_, e), (b, _) in zip(occurrences[:-1], occurrences[1:], strict=True))
            if overlapping or any(taken[b:e].any() for b, e in occurrences):
                continue
            keep = int(rng.integers(len(occurrences)))
            for b, e in occurrences:
                taken[b:e] = True
            asked += [(b, len(kept)) for k, (b, _) in enumerate(occurrences) if k != keep]
            kept.append(occurrences[keep])
            room -= len(occurrences) - 1
            if room == 0:
                break
        return _replace(instance, kept, sorted(asked))


def _replace(instance: Instance, kept: Occurrences, asked: list[tuple[int, int]]) -> SpanQuestions:
    """Each asked occurrence cut to one [MASK]; positions renumbered in the shorter instance."""
    stays = np.ones(len(instance.ids), dtype=bool)
    for begin, group in asked:
        length = kept[group][1] - kept[group][0]
        stays[begin + 1:begin + length] = False
    renumbered = np.cumsum(stays) - 1
    ids, flags = instance.ids[stays].copy(), instance.flags[stays].copy()
    slots = renumbered[[b for b, _ in asked]].astype(np.int64)
    ids[slots], flags[slots] = MASK_ID, FLAGS_SPECIAL
    groups = [g for _, g in asked]
    starts = np.array([renumbered[kept[g][0]] for g in groups], dtype=np.int64)
    ends = np.array([renumbered[kept[g][1] - 1] for g in groups], dtype=np.int64)
    length_a = int(renumbered[instance.length_a + 1]) - 1  # the first [SEP] sits at 1 + length_a
    return SpanQuestions(Instance(ids, flags, length_a, instance.label), slots, starts, ends)
