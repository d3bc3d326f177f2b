"""The sentences that results tables score on, so that no distillation sample or mined pair holds one.

A corpus is raw web/review/law text, and an STS or retrieval sentence can sit in it word for word (news
headlines, questions, reviews). Distilling a student towards the teacher's vector of a test sentence
would leak the test into training, so every sentence sample drops these before it is used.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from kalbert.data.loaders import STSPair, load_nli, load_pairs, load_parallel, load_sts, load_sts_file
from kalbert.data.registry import DATASETS
from kalbert.data.roots import data_path
from kalbert.errors import KalbertError

log = logging.getLogger(__name__)
SENTENCE_KINDS = ("sts", "pairs", "nli", "parallel")
PICKING_SPLITS = ("dev",)
"""STS dev splits pick checkpoints; they stay out of samples too"""


def heldout_splits() -> list[tuple[str, str]]:
    """(name, split) of every sentence-level split that is reported, or that picks a checkpoint (STS dev)."""
    splits = []
    for name, spec in DATASETS.items():
        if spec.kind not in SENTENCE_KINDS:
            continue
        picking = PICKING_SPLITS if spec.kind == "sts" else ()
        splits += [(name, split) for split in spec.splits if split in spec.eval_splits or split in picking]
    return splits


def _split_sentences(name: str, split: str) -> Iterable[str]:
    kind = DATASETS[name].kind
    if kind == "sts":
        return (s for pair in load_sts(name, split) for s in (pair.sentence1, pair.sentence2))
    if kind == "pairs":
        return (s for pair in load_pairs(name, split) for s in (pair.sentence1, pair.sentence2))
    if kind == "nli":
        return (s for pair in load_nli(name, split) for s in (pair.premise, pair.hypothesis))
    return (s for row in load_parallel(name).rows for s in row)


@lru_cache(maxsize=1)
def heldout_sentences() -> frozenset[str]:
    """Every sentence of :func:`heldout_splits` that is on disk, whitespace-stripped."""
    sentences: set[str] = set()
    for name, split in heldout_splits():
        try:
            data_path(name, split)
        except KalbertError:
            continue  # a data set that is not here cannot leak into a sample either
        sentences.update(s.strip() for s in _split_sentences(name, split))
    return frozenset(sentences)


def drop_heldout(sentences: Iterable[str]) -> tuple[list[str], int]:
    """``sentences`` without held-out ones, and how many were dropped (logged)."""
    heldout = heldout_sentences()
    kept, dropped = [], 0
    for sentence in sentences:
        if sentence.strip() in heldout:
            dropped += 1
        else:
            kept.append(sentence)
    if dropped:
        log.info("dropped %d sentences that evaluation splits score on", dropped)
    return kept, dropped


def is_pairs_file(ref: str) -> bool:
    """True where a training flag's entry names a graded-pair file of one's own rather than a data set."""
    return ref.partition(":")[0] not in DATASETS and Path(ref).expanduser().is_file()


def load_clean_sts_file(path: str | Path) -> list[STSPair]:
    """A graded-pair file of one's own (e.g. `kalbert sbert mine`'s), refused if it holds a sentence that an
    evaluation split scores: such a file would leak the test into training."""
    pairs = load_sts_file(path)
    _, leaked = drop_heldout(s for pair in pairs for s in (pair.sentence1, pair.sentence2))
    if leaked:
        raise KalbertError(f"{path} holds {leaked} sentences that evaluation splits score",
                           "leave them out (kalbert sbert mine does) or train on a registered split by name")
    return pairs
