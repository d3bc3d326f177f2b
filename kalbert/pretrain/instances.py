"""Sentence-order-prediction instances, built the way ALBERT's ``create_pretraining_data.py`` does.

Per document, sentences are accumulated into a chunk until it reaches a target length (the full
``max_seq_length - 3`` or, with probability ``short_seq_prob``, a random shorter one). The chunk is
cut at a random sentence boundary into A and B; with p=0.5 the two are swapped (label 1), else
kept in order (label 0). A chunk of a single sentence has no boundary to cut at: as in ALBERT, B is
then a random stretch of another document and the label is 1 ("not in order"); such instances and
the single-sentence documents that cause them are counted. Corpora of one-line documents (reviews,
titles) make these a large share, and SOP then degenerates into topic-shift detection with a
majority label far from 0.5; ``single_sentence="split"`` instead cuts such a sentence at a random
word start inside it, so every instance asks about order. Over-long pairs lose tokens one at a
time from the longer segment, from its front or back at random.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from kalbert.pretrain.tokens import WORD_START
from kalbert.vocab.files import CLS_ID, SEP_ID

Sentence = tuple[np.ndarray, np.ndarray]
"""Token ids (int32) and unit-start flags (uint8) of one sentence."""
Document = list[Sentence]

SingleSentence = Literal["random-b", "split"]
"""How a one-sentence chunk becomes an SOP pair (see the module docstring)."""
FLAGS_SPECIAL = np.uint8(3)  # special tokens open a unit of their own


@dataclass
class Instance:
    """One pair ``[CLS] A [SEP] B [SEP]`` with its flags, A's length and the SOP label."""

    ids: np.ndarray
    flags: np.ndarray
    length_a: int
    label: int


def _concat(sentences: Sequence[Sentence]) -> Sentence:
    return np.concatenate([s[0] for s in sentences]), np.concatenate([s[1] for s in sentences])


def _truncate_pair(length_a: int, length_b: int, max_tokens: int, rng: random.Random) -> tuple[slice, slice]:
    """ALBERT's ``truncate_seq_pair`` as slices: drop from the longer side, front or back at random."""
    a_start, a_end, b_start, b_end = 0, length_a, 0, length_b
    while (a_end - a_start) + (b_end - b_start) > max_tokens:
        if a_end - a_start > b_end - b_start:
            if rng.random() < 0.5:
                a_start += 1
            else:
                a_end -= 1
        elif rng.random() < 0.5:
            b_start += 1
        else:
            b_end -= 1
    return slice(a_start, a_end), slice(b_start, b_end)


def _pack(a: Sentence, b: Sentence, label: int) -> Instance:
    special = np.array([CLS_ID], dtype=np.int32), np.array([SEP_ID], dtype=np.int32)
    flag = np.array([FLAGS_SPECIAL], dtype=np.uint8)
    ids = np.concatenate([special[0], a[0], special[1], b[0], special[1]])
    flags = np.concatenate([flag, a[1], flag, b[1], flag])
    return Instance(ids, flags, len(a[0]), label)


def _random_b(documents: Sequence[Document], index: int, target: int, rng: random.Random) -> list[Sentence]:
    """Sentences from a random other document (ALBERT tries 10 times to avoid the same one)."""
    other = index
    for _ in range(10):
        other = rng.randint(0, len(documents) - 1)
        if other != index:
            break
    document = documents[other]
    taken: list[Sentence] = []
    length = 0
    for sentence in document[rng.randint(0, len(document) - 1):]:
        taken.append(sentence)
        length += len(sentence[0])
        if length >= target:
            break
    return taken


def _split_sentence(sentence: Sentence, rng: random.Random) -> list[Sentence] | None:
    """A sentence cut in two at a random word start inside it (any token boundary if it has none)."""
    ids, flags = sentence
    if len(ids) < 2:
        return None
    inside = np.flatnonzero(flags[1:] & WORD_START) + 1
    cut = int(rng.choice(inside)) if len(inside) else rng.randint(1, len(ids) - 1)
    return [(ids[:cut], flags[:cut]), (ids[cut:], flags[cut:])]


def document_instances(documents: Sequence[Document], index: int, max_seq_length: int, short_seq_prob: float,
                       rng: random.Random, stats: Counter, single_sentence: SingleSentence = "random-b"
                       ) -> list[Instance]:
    """The SOP instances of ``documents[index]``; ``documents`` supplies random B segments."""
    document = documents[index]
    max_tokens = max_seq_length - 3
    target = rng.randint(2, max_tokens) if rng.random() < short_seq_prob else max_tokens
    if len(document) == 1:
        stats["single_sentence_documents"] += 1
    instances: list[Instance] = []
    chunk: list[Sentence] = []
    length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i][0])
        if i == len(document) - 1 or length >= target:
            if len(chunk) == 1 and single_sentence == "split":
                halves = _split_sentence(chunk[0], rng)
                if halves is None:
                    stats["unsplittable_sentences"] += 1
                    chunk, length = [], 0
                    i += 1
                    continue
                chunk = halves
                stats["split_sentence_instances"] += 1
            cut = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            a_part = chunk[:cut]
            if len(chunk) == 1:
                a_len = sum(len(s[0]) for s in a_part)
                b_part = _random_b(documents, index, max(1, target - a_len), rng)
                label = 1
                stats["random_b_instances"] += 1
            else:
                b_part = chunk[cut:]
                label = 1 if rng.random() < 0.5 else 0
                if label:
                    a_part, b_part = b_part, a_part
                    stats["swapped_instances"] += 1
            a, b = _concat(a_part), _concat(b_part)
            if len(a[0]) + len(b[0]) > max_tokens:
                stats["truncated_instances"] += 1
            keep_a, keep_b = _truncate_pair(len(a[0]), len(b[0]), max_tokens, rng)
            a, b = (a[0][keep_a], a[1][keep_a]), (b[0][keep_b], b[1][keep_b])
            if len(a[0]) and len(b[0]):
                instances.append(_pack(a, b, label))
                stats["instances"] += 1
            chunk, length = [], 0
        i += 1
    return instances
