"""The QA data a fine-tuning run reads: each set's fixed parts by article (recorded), in the model's script.

DRCD is Traditional Chinese; a model whose languages include zh reads it converted to Simplified (OpenCC
t2s, :mod:`kalbert.data.script`), the script of kalbert's Chinese vocabularies and corpora. The parts are
cut from the published titles before any conversion, so they are the same for every model, and
:func:`article_split` records them (counts and a hash of which article went where) in every QA record.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

from kalbert.data import QA_CARVES, QAExample, load_qa
from kalbert.data.loaders import locate_answer
from kalbert.data.registry import QA_CARVE_SEED
from kalbert.data.script import read_as, reads_simplified, to_simplified

QA_PARTS = ("train", "val", "test")


def simplified(example: QAExample) -> QAExample:
    """``example`` in Simplified script; each answer start is kept where the converted answer still sits there
    (t2s keeps every DRCD length), else moved to its nearest occurrence."""
    context = to_simplified(example.context)
    answers = tuple(to_simplified(answer) for answer in example.answers)
    starts = tuple(locate_answer(context, answer, start) if start >= 0 else -1
                   for answer, start in zip(answers, example.answer_starts, strict=True))
    return replace(example, title=to_simplified(example.title), context=context,
                   question=to_simplified(example.question), answers=answers, answer_starts=starts)


def load_examples(name: str, split: str, languages: list[str]) -> list[QAExample]:
    """``load_qa(name, split)`` in the script a model of ``languages`` reads."""
    examples = load_qa(name, split)
    return [simplified(e) for e in examples] if reads_simplified(name, languages) else examples


def read_label(name: str, languages: list[str]) -> str:
    """How records name the set as read: ``drcd (Traditional -> Simplified, opencc t2s)`` or ``korquad``."""
    return read_as(name, reads_simplified(name, languages))


def article_split(name: str) -> dict[str, Any]:
    """Which articles each fixed part of ``name`` holds: the divided files, the counts per part, and a SHA-256
    of the sorted ``part<TAB>title`` lines, so a record says exactly what was trained, picked and reported on."""
    parts = {part: load_qa(name, part) for part in QA_PARTS}
    titles = {part: sorted({e.title for e in examples}) for part, examples in parts.items()}
    lines = sorted(f"{part}\t{title}" for part in QA_PARTS for title in titles[part])
    return {"divided": list(QA_CARVES[(name, "test")].sources), "seed": QA_CARVE_SEED,
            "articles": {part: len(titles[part]) for part in QA_PARTS},
            "questions": {part: len(parts[part]) for part in QA_PARTS},
            "sha256": hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()}
