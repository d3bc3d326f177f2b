"""Monolingual sentences for corpus distillation (split, NFC, deduplicated, length-filtered, language-balanced)
and their teacher vectors in the embedding cache; whole paragraphs the same way, for students that also embed
passages.

Only corpora are accepted (``resolve_sources`` refuses STS, NLI and other evaluation data), so a
student never learns its teacher's view of a sentence that a results table scores. Each language is
reservoir-sampled with a fixed seed; for several languages the budget is shared in proportion to
n ** (1/T) (the same temperature rule as bilingual vocabularies).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from tqdm.auto import tqdm

from kalbert.data import DATASETS, iter_documents, resolve_sources
from kalbert.data.heldout import heldout_sentences
from kalbert.data.passages import PassageGuard, passage_index
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_bytes, sha256_file
from kalbert.shards import Shard, in_share
from kalbert.teachers.backends import TeacherBackend, load_teacher
from kalbert.teachers.cache import EmbeddingCache, open_cache, sentence_key
from kalbert.text.balance import temperature_quotas
from kalbert.text.normalize import normalize_text
from kalbert.text.sentences import split_sentences

log = logging.getLogger(__name__)
SCRIPT = {"ko": re.compile(r"[\uac00-\ud7a3]"), "zh": re.compile(r"[\u4e00-\u9fff]")}
Unit = Literal["sentence", "paragraph"]
CHARS: dict[Unit, tuple[int, int]] = {"sentence": (10, 200), "paragraph": (64, 1500)}
"""Lengths a sampled unit may have: a sentence that says something; a paragraph of a few sentences, not a list
item or heading, nor a whole article that a student's 256 tokens would mostly cut off."""


@dataclass
class CorpusSample:
    """Sampled sentences (or paragraphs) per language and how many eligible distinct ones each language offered."""

    sentences: dict[str, list[str]]
    available: dict[str, int]
    heldout_dropped: int = 0
    """corpus sentences (paragraphs holding one) left out because an evaluation split scores them
    (kalbert.data.heldout)"""
    passage_documents_dropped: int = 0
    """corpus documents left out because they hold a QA or MC evaluation passage (kalbert.data.passages)"""

    def all(self) -> list[str]:
        return [s for lang in sorted(self.sentences) for s in self.sentences[lang]]


def corpus_language(source: str) -> str:
    """A corpus name's registered language, else the script that dominates a file's first documents."""
    if source in DATASETS and DATASETS[source].lang in SCRIPT:
        return DATASETS[source].lang
    counts = dict.fromkeys(SCRIPT, 0)
    for seen, document in enumerate(iter_documents([source])):
        for lang, script in SCRIPT.items():
            counts[lang] += len(script.findall(" ".join(document)))
        if seen > 200:
            break
    return max(counts, key=counts.get)


def _eligible(text: str, lang: str, min_chars: int, max_chars: int) -> bool:
    """Long enough, not too long, and mostly written in the language's script (no tables or code lines)."""
    if not min_chars <= len(text) <= max_chars:
        return False
    return len(SCRIPT[lang].findall(text)) >= 0.4 * len(text.replace(" ", ""))


def _units(paragraph: str, unit: Unit) -> list[str]:
    """A corpus paragraph's sentences, or the paragraph itself, normalised."""
    text = normalize_text(paragraph)
    return split_sentences(text) if unit == "sentence" else [text]


def _held_out(text: str, unit: Unit, heldout: frozenset[str]) -> bool:
    """Whether an evaluation split scores ``text`` (a paragraph: any sentence of it)."""
    return any(s.strip() in heldout for s in ([text] if unit == "sentence" else split_sentences(text)))


def sample_sentences(sources: list[str], max_sentences: int, seed: int = 13, min_chars: int | None = None,
                     max_chars: int | None = None, lang_temperature: float = 2.0, progress: bool = True,
                     unit: Unit = "sentence") -> CorpusSample:
    """Up to ``max_sentences`` distinct corpus sentences (``unit="paragraph"``: whole paragraphs), balanced across
    the sources' languages, within ``min_chars``-``max_chars`` (default: the unit's :data:`CHARS`); none that an
    evaluation split scores (or holds a sentence of), none from a document holding an evaluation passage."""
    resolve_sources(sources)  # fail on a bad name before reading anything
    low, high = CHARS[unit]
    min_chars, max_chars = low if min_chars is None else min_chars, high if max_chars is None else max_chars
    heldout, dropped, guard = heldout_sentences(), 0, PassageGuard()
    by_lang: dict[str, list[str]] = {}
    for source in sources:
        by_lang.setdefault(corpus_language(source), []).append(source)
    pools: dict[str, list[str]] = {}
    available: dict[str, int] = {}
    for lang, lang_sources in sorted(by_lang.items()):
        # distinct texts by hash: a corpus' paragraphs do not fit in memory as strings
        rng, pool, seen = random.Random(f"{seed}-{lang}"), [], set()
        for document in tqdm(guard.filter(iter_documents(lang_sources)), desc=f"{unit}s {lang}", unit=" doc",
                             disable=not progress, mininterval=2):
            for paragraph in document:
                for text in _units(paragraph, unit):
                    key = sentence_key(text)
                    if key in seen or not _eligible(text, lang, min_chars, max_chars):
                        continue
                    if _held_out(text, unit, heldout):
                        dropped += 1
                        continue
                    seen.add(key)
                    if len(pool) < max_sentences:
                        pool.append(text)
                    elif (slot := rng.randrange(len(seen))) < max_sentences:
                        pool[slot] = text
        if not pool:
            raise KalbertError(f"the {lang} corpora {', '.join(lang_sources)} yield no {unit}s of "
                               f"{min_chars}-{max_chars} characters", "check the files hold text in that language")
        pools[lang], available[lang] = pool, len(seen)
    quotas = temperature_quotas(available, max_sentences, lang_temperature)
    sampled = {lang: random.Random(f"{seed}-take-{lang}").sample(pool, min(quotas[lang], len(pool)))
               for lang, pool in pools.items()}
    if dropped:
        log.info("left out %d corpus %ss that evaluation splits score", dropped, unit)
    guard.log()
    return CorpusSample(sampled, available, dropped, guard.total)


def cached_sample(sources: list[str], max_sentences: int, cache_dir: Path, seed: int = 13,
                  lang_temperature: float = 2.0, unit: Unit = "sentence") -> CorpusSample:
    """:func:`sample_sentences` of ``unit``, stored once per setting and file contents (reading all corpora takes
    minutes; files are known by name and hash, so a fresh copy of the data, with new times, finds the sample)."""
    min_chars, max_chars = CHARS[unit]
    files = [(p.name, p.stat().st_size, sha256_file(p)) for p in resolve_sources(sources)]
    setting = [sources, files, max_sentences, seed, min_chars, max_chars, lang_temperature, "heldout-dropped",
               passage_index().sha256]
    if unit != "sentence":  # sentence samples keep their settings, so the files stored before still match
        setting.append(unit)
    path = Path(cache_dir) / f"sample-{hashlib.sha256(json.dumps(setting).encode()).hexdigest()[:16]}.json.gz"
    if path.is_file():
        return CorpusSample(**json.loads(gzip.decompress(path.read_bytes())))
    sample = sample_sentences(sources, max_sentences, seed, min_chars, max_chars, lang_temperature, unit=unit)
    atomic_write_bytes(path, gzip.compress(json.dumps(asdict(sample), ensure_ascii=False).encode("utf-8")))
    return sample


def corpus_sentences(corpus: list[str], max_sentences: int, seed: int, cache: EmbeddingCache,
                     shard: Shard | None = None, unit: Unit = "sentence") -> dict[str, list[str]]:
    """The sampled corpus sentences (or paragraphs) per language, each with its teacher vector in ``cache`` (with
    ``shard``: only that share of them is encoded here)."""
    sample = cached_sample(corpus, max_sentences, cache.folder.parent / "samples", seed, unit=unit)
    cache.fill([s for s in sample.all() if in_share(int.from_bytes(sentence_key(s)[:8], "little"), shard)])
    return sample.sentences


def corpus_targets(teacher: str, corpus: list[str], max_sentences: int, seed: int, cache_dir: str | None,
                   bf16: bool = False, backend: TeacherBackend | None = None,
                   shard: Shard | None = None) -> tuple[list[str], EmbeddingCache]:
    """Sample the corpus sentences and make sure the cache holds the teacher's vector of each (of ``shard``'s
    share of them), encoded by ``backend`` (``bf16``: under bf16 autocast, into a cache of their own)."""
    cache = open_cache(load_teacher(teacher, bf16=bf16), cache_dir, backend)
    by_lang = corpus_sentences(corpus, max_sentences, seed, cache, shard)
    return [s for lang in sorted(by_lang) for s in by_lang[lang]], cache
