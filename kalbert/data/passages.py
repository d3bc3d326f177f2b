"""Evaluation passages kept out of every corpus that becomes pretraining or distillation text.

QA contexts and multiple-choice passages (KorQuAD, CMRC 2018, DRCD, C3, CHID, KoBEST, XCOPA) are
Wikipedia, news and web text, and so are the corpora: 83 of 500 scored KorQuAD questions sat on
passages inside the kowiki sample. A model that pretrained on a passage has read the test.
:mod:`kalbert.data.heldout` drops single evaluation *sentences* from sentence samples; this module
drops whole corpus *documents* that hold an evaluation passage, wherever the corpus is read.

Index: every passage of a split that a results table scores or that picks a checkpoint (``dev``), and
for QA the whole files that kalbert divides by article (the test part is carved from them). Text is
compared as its letters and digits only, after NFKC and lower-casing: whitespace, line breaks and
punctuation are gone, so a copy that is re-wrapped, re-spaced or differently quoted reads the same.
Two kinds of key are indexed:

- sentences (cut at . ! ? 。 ; before the rest of the punctuation goes) of :data:`MIN_CHARS` letters
  or more: a sentence copied alone;
- runs of :data:`RUN_CHARS` letters starting every :data:`RUN_STEP` letters of a passage, looked up at
  every position of a document: any shared stretch of RUN_CHARS + RUN_STEP - 1 letters is found, also
  when the sentences around it were edited (an article revised after the data set was made).

DRCD, published in Traditional script, is indexed in Simplified too (OpenCC t2s), so a Simplified copy
matches as well. CHID's blank is filled with its answer, as the original text reads.

Rule: a document is dropped when **any** key matches. Twenty letters (about six Korean words, a long
Chinese clause) forming a whole sentence, or fifty in a row, are a copy, not a coincidence: on the real
corpora every matched document inspected was the passage's article, a revision of it or a text it
quotes. A share threshold would keep a long article that holds one scored passage among many paragraphs
(the kowiki case), and one copied sentence that answers a test question is already the leak. Measured
on the kowiki sample: 155 of the first 500 KorQuAD test questions sit on a passage that shares 40
letters in a row with some document; after the filter (278 documents dropped by sentences, 19 more by
runs) none is left. The filter reads kowiki in about 25 s on one core.

Short texts (most COPA/XCOPA sentences) fall under MIN_CHARS and are not guarded: short sentences
recur by chance. The index is built once per state of the data roots (the files found, their sizes
and times) and kept in memory; with no QA or MC data present it is empty and documents pass untouched.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from kalbert.data.loaders import BLANK, load_boolq, load_mc, load_qa
from kalbert.data.registry import DATASETS, QA_CARVES
from kalbert.data.roots import data_path
from kalbert.data.script import TRADITIONAL, to_simplified
from kalbert.errors import KalbertError

log = logging.getLogger(__name__)
PASSAGE_KINDS = ("qa", "mc")
PASSAGE_PAIRS = ("kobest-boolq",)
"""pair sets whose rows carry a passage (BoolQ's Korean Wikipedia passages), indexed like the QA and MC ones"""
PICKING_SPLITS = ("dev",)
"""MC dev splits pick the epoch; their passages stay out of corpora too"""
MIN_CHARS = 20
"""letters and digits a sentence needs to be indexed and matched"""
RUN_CHARS = 50
"""letters in a run key"""
RUN_STEP = 10
"""a passage's runs start every this many letters (memory: about 280k runs for all sets)"""
_BREAK = re.compile(r"[.!?。;]")
_NOT_LETTERS = re.compile(r"[\W_]+")


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def sentence_keys(text: str) -> list[str]:
    """``text``'s sentences as letters and digits only, those of MIN_CHARS or more."""
    return [key for piece in _BREAK.split(_folded(text)) if len(key := _NOT_LETTERS.sub("", piece)) >= MIN_CHARS]


def letters(text: str) -> str:
    """``text`` as lower-cased letters and digits only, the string runs are cut from."""
    return _NOT_LETTERS.sub("", _folded(text))


def passage_splits() -> list[tuple[str, str]]:
    """(name, split) of every scored or epoch-picking split with passages; a carved QA part is left to the
    whole split it is cut from (``korquad:dev``, ``cmrc2018:dev``, ``drcd:all``)."""
    splits = []
    for name, spec in DATASETS.items():
        if spec.kind not in PASSAGE_KINDS and name not in PASSAGE_PAIRS:
            continue
        splits += [(name, split) for split in spec.splits if (name, split) not in QA_CARVES
                   and (split in spec.eval_splits or split in PICKING_SPLITS)]
    return splits


def _passages(name: str, split: str) -> Iterator[str]:
    kind = DATASETS[name].kind
    if kind == "qa":
        yield from dict.fromkeys(example.context for example in load_qa(name, split))
    elif kind == "mc":
        for example in load_mc(name, split):
            yield example.context.replace(BLANK, example.choices[example.label])
            yield from example.choices
    else:
        yield from (example.passage for example in load_boolq(name, split))


@dataclass(frozen=True)
class PassageIndex:
    """Sentence and run keys of the evaluation passages, each with the data set that scores it."""

    sentences: dict[str, str]
    """sentence key -> data set name (the first that holds it)"""
    runs: dict[str, str]
    """run key -> data set name"""
    splits: tuple[str, ...]
    """the ``name:split`` references indexed (those on disk)"""
    sha256: str
    """hash of the sorted keys, so records and caches tell one index from another"""

    def owner(self, document: list[str]) -> str | None:
        """The data set whose passage the document holds, or None for a clean document."""
        if not (self.sentences or self.runs):
            return None
        text = "\n".join(document)
        found = next((self.sentences[key] for key in sentence_keys(text) if key in self.sentences), None)
        if found is not None:
            return found
        flat, runs = letters(text), self.runs
        return next((runs[run] for i in range(len(flat) - RUN_CHARS + 1) if (run := flat[i:i + RUN_CHARS]) in runs),
                    None)


FileState = tuple[tuple[str, str, tuple[tuple[str, int, int], ...]], ...]


def _state() -> FileState:
    """(name, split, (path, size, mtime) per file) of every passage split found."""
    found = []
    for name, split in passage_splits():
        try:
            paths = data_path(name, split)
        except KalbertError:
            continue  # a data set that is not here cannot leak into a corpus either
        found.append((name, split, tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in paths)))
    return tuple(found)


@lru_cache(maxsize=2)
def _build(state: FileState) -> PassageIndex:
    sentences: dict[str, str] = {}
    runs: dict[str, str] = {}
    for name, split, _ in state:
        for passage in _passages(name, split):
            for text in (passage, to_simplified(passage)) if name in TRADITIONAL else (passage,):
                for key in sentence_keys(text):
                    sentences.setdefault(key, name)
                flat = letters(text)
                for start in range(0, len(flat) - RUN_CHARS + 1, RUN_STEP):
                    runs.setdefault(flat[start:start + RUN_CHARS], name)
    digest = hashlib.sha256("\n".join([*sorted(sentences), "", *sorted(runs)]).encode("utf-8")).hexdigest()
    return PassageIndex(sentences, runs, tuple(f"{name}:{split}" for name, split, _ in state), digest)


def passage_index() -> PassageIndex:
    """The index for the data roots as they are now (built once per state, then kept in memory)."""
    return _build(_state())


@dataclass
class PassageGuard:
    """Streams corpus documents without the ones that hold an evaluation passage, counting the drops."""

    index: PassageIndex = field(default_factory=passage_index)
    dropped: Counter[str] = field(default_factory=Counter)
    """documents dropped, by the data set whose passage they hold"""

    def filter(self, documents: Iterable[list[str]]) -> Iterator[list[str]]:
        for document in documents:
            owner = self.index.owner(document)
            if owner is None:
                yield document
            else:
                self.dropped[owner] += 1

    @property
    def total(self) -> int:
        return sum(self.dropped.values())

    def log(self) -> None:
        if self.total:
            log.info(describe_drops(self.record()))

    def record(self) -> dict[str, Any]:
        """What a built folder's kalbert.json says about the filter."""
        return {"dropped_documents": self.total, "by_data_set": dict(self.dropped.most_common()),
                "indexed": list(self.index.splits), "sentence_keys": len(self.index.sentences),
                "run_keys": len(self.index.runs), "index_sha256": self.index.sha256}



def describe_drops(record: dict[str, Any]) -> str:
    """``dropped 7 documents holding evaluation passages (korquad: 5, c3: 2)`` from a :meth:`PassageGuard.record`."""
    counts = ", ".join(f"{name}: {n:,}" for name, n in record["by_data_set"].items())
    return (f"dropped {record['dropped_documents']:,} documents holding evaluation passages"
            + (f" ({counts})" if counts else ""))
