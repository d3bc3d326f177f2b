"""Idiom cloze examples in CHID's format, cut from a Chinese corpus, to train `kalbert mc train --task chid`.

CHID was made by blanking an idiom (成语) in news and novel text and offering it among other idioms.
FewCLUE ships 202 training examples of it: too few for a small model, which stays at chance (17.93 on
its test against 14.3). The construction needs no labels, so it runs on any Chinese corpus: each
4-character idiom of jieba's dictionary (part of speech ``i``) found in a paragraph can be blanked, with
other idioms found in the corpus as the wrong candidates. Documents that hold an evaluation passage are
dropped before anything is read from them (:mod:`kalbert.data.passages` indexes CHID's dev and test
passages with every other scored set), so no scored passage becomes training text.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from kalbert import __version__
from kalbert.artifact import invocation
from kalbert.config import DEFAULT_SEED, render_command
from kalbert.data.corpus import iter_documents, resolve_sources
from kalbert.data.passages import PassageGuard
from kalbert.errors import KalbertError
from kalbert.hardware import hardware_block
from kalbert.io import atomic_write_json, atomic_write_text, refuse_existing_output
from kalbert.lineage import record_beside

log = logging.getLogger(__name__)
IDIOM_TAG = "i"
"""jieba's part-of-speech tag for idioms"""
IDIOM_SLOT = "#idiom#"
"""the blank in CHID's ``content`` field"""


@dataclass
class ClozeConfig:
    """Idiom cloze examples from Chinese corpora (CHID format), for `kalbert mc train --extra-train`."""

    out: str
    """output JSONL, one CHID record per line; its record is OUT with .json"""
    corpus: list[str] = field(default_factory=lambda: ["zh-clue"])
    """Chinese corpus names (kalbert data list) or files"""
    max_examples: int = 6000
    """examples to write"""
    candidates: int = 7
    """idioms offered per blank, the answer among them (CHID: 7)"""
    context_chars: int = 60
    """characters of the paragraph kept on each side of the blank"""
    max_per_idiom: int = 10
    """examples blanking one idiom at most, so frequent set phrases do not crowd out the rest"""
    seed: int = DEFAULT_SEED
    """seed of the blanks picked and the wrong candidates"""


@dataclass(frozen=True)
class Blank:
    """One idiom occurrence: the paragraph around it, with the idiom cut out."""

    before: str
    idiom: str
    after: str


def idiom_lexicon() -> frozenset[str]:
    """The 4-character idioms of jieba's dictionary (about 22k)."""
    import jieba

    idioms = set()
    with jieba.get_dict_file() as lines:  # the dictionary jieba ships, opened in binary
        for line in lines:
            word, _count, tag = (line.decode("utf-8").split() + ["", ""])[:3]
            if tag == IDIOM_TAG and len(word) == 4:
                idioms.add(word)
    return frozenset(idioms)


def find_blanks(paragraph: str, idioms: frozenset[str], context_chars: int) -> list[Blank]:
    """Every idiom occurrence in ``paragraph`` (left to right, never overlapping) with its context."""
    blanks, at = [], 0
    while at <= len(paragraph) - 4:
        word = paragraph[at:at + 4]
        if word in idioms:
            blanks.append(Blank(paragraph[max(0, at - context_chars):at], word,
                                paragraph[at + 4:at + 4 + context_chars]))
            at += 4
        else:
            at += 1
    return blanks


def _check(config: ClozeConfig) -> None:
    if config.max_examples < 1 or config.max_per_idiom < 1 or config.context_chars < 1:
        raise KalbertError("--max-examples, --max-per-idiom and --context-chars must be at least 1")
    if config.candidates < 2:
        raise KalbertError("--candidates must be at least 2 (the answer and one wrong idiom)")
    resolve_sources(config.corpus)  # a bad corpus name fails before the passage index is built


def build_cloze(config: ClozeConfig, overwrite: bool = False, progress: bool = True) -> dict[str, Any]:
    """Read the corpora, blank idioms, write the JSONL and its record; returns the record."""
    _check(config)
    out = Path(config.out)
    refuse_existing_output(out, overwrite)
    started = time.perf_counter()
    idioms = idiom_lexicon()
    guard = PassageGuard()
    rng = random.Random(config.seed)
    kept: dict[str, list[Blank]] = {}
    seen: Counter[str] = Counter()
    documents = 0
    for document in tqdm(guard.filter(iter_documents(config.corpus)), desc="idioms", unit=" doc",
                         disable=not progress, mininterval=2):
        documents += 1
        for paragraph in document:
            for blank in find_blanks(paragraph, idioms, config.context_chars):
                seen[blank.idiom] += 1
                pool = kept.setdefault(blank.idiom, [])
                if len(pool) < config.max_per_idiom:  # reservoir: a uniform sample of each idiom's uses
                    pool.append(blank)
                elif (slot := rng.randrange(seen[blank.idiom])) < config.max_per_idiom:
                    pool[slot] = blank
    guard.log()
    if len(seen) < config.candidates:
        raise KalbertError(f"the corpora hold {len(seen)} distinct idioms, fewer than the {config.candidates} "
                           "candidates of one example", "pass Chinese corpora (e.g. --corpus zh-clue)")
    blanks = [blank for idiom in sorted(kept) for blank in kept[idiom]]
    rng.shuffle(blanks)
    blanks = blanks[:config.max_examples]
    vocabulary = sorted(seen)
    lines, skipped = [], 0
    for blank in blanks:
        context = blank.before + blank.idiom + blank.after
        # a wrong idiom must not read right in place: none that the context holds (its blank's included)
        in_context = {context[at:at + 4] for at in range(len(context) - 3)}
        if len(seen.keys() - in_context) < config.candidates - 1:  # too few left to draw from (tiny corpora)
            skipped += 1
            continue
        wrong: set[str] = set()
        while len(wrong) < config.candidates - 1:
            other = rng.choice(vocabulary)
            if other not in in_context:
                wrong.add(other)
        candidates = sorted(wrong) + [blank.idiom]
        rng.shuffle(candidates)
        lines.append(json.dumps({"id": f"cloze-{len(lines)}", "candidates": candidates,
                                 "content": blank.before + IDIOM_SLOT + blank.after,
                                 "answer": candidates.index(blank.idiom)}, ensure_ascii=False))
    if not lines:
        raise KalbertError(f"no blank has {config.candidates - 1} wrong idioms left that its own text does not hold",
                           "pass more Chinese corpora or fewer --candidates")
    if len(lines) < config.max_examples:
        log.warning("the corpora yield %d idiom cloze examples, fewer than the %d asked: writing %d",
                    len(lines), config.max_examples, len(lines))
    text = "".join(line + "\n" for line in lines)
    record = {
        "kind": "idiom-cloze",
        "kalbert_version": __version__,
        "languages": ["zh"],
        "file": out.name,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "config": asdict(config),
        "lexicon": {"source": "jieba dictionary, part of speech 'i', 4 characters", "idioms": len(idioms)},
        "documents_read": documents,
        "passage_filter": guard.record(),
        "occurrences": sum(seen.values()),
        "distinct_idioms": len(seen),
        "examples": {"asked": config.max_examples, "written": len(lines), "skipped_too_few_candidates": skipped,
                     "distinct_answers": len({blank.idiom for blank in blanks})},
        "seconds": round(time.perf_counter() - started, 1),
        "command": invocation() or render_command("kalbert mc cloze", config),
        "hardware": hardware_block(),
    }
    atomic_write_json(record_beside(out), record)  # the record first: a cloze file never lacks its lineage
    atomic_write_text(out, text)
    log.info("wrote %d idiom cloze examples into %s", len(lines), out)
    return record
