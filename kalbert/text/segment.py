"""Morphological segmentation inside whitespace words: mecab-ko for Hangul, jieba for Han.

Only the boundaries *inside* a whitespace word matter to the vocabulary: they are
marked with :data:`BOUNDARY` and handed to SentencePiece as ``pretokenization_delimiter``, while
spaces stay spaces. That makes a per-word cache valid and fast: Korean words repeat a lot, so
mecab only ever sees each distinct Hangul run once per worker, on its own, so the result depends
on the text alone and never on how it was chunked across processes.
"""

from __future__ import annotations

import importlib.metadata
import logging
import multiprocessing as mp
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from kalbert.errors import KalbertError

BOUNDARY = "\u241f"  # "␟": never in real text, survives SentencePiece normalisation
_HANGUL = "\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\ud7b0-\ud7ff"
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f"
_RUNS = re.compile(rf"([{_HANGUL}]+)|([{_HAN}]+)|([^{_HANGUL}{_HAN}]+)")
_HANGUL_WORD = re.compile(f"[{_HANGUL}]+")
_CACHE_LIMIT = 400_000


def _run(groups: tuple[str, str, str]) -> tuple[int, str]:
    """(kind, text) of one ``_RUNS.findall`` match; kind 1: Hangul, 2: Han, 3: anything else."""
    hangul, han, other = groups
    return (1, hangul) if hangul else (2, han) if han else (3, other)


class MecabAnalyzer:
    """Splits Hangul runs into morphemes with python-mecab-ko, one lattice per distinct run, cached.

    Each run is analysed on its own, out of its sentence: its morphemes are then a function of the
    run alone (the same for any batching, process count or hash seed), and a run-level cache is what
    makes corpus-scale segmentation fast. benchmarks/segmentation_speed.py measures the agreement with
    in-sentence analysis.
    """

    name = "mecab"

    def __init__(self) -> None:
        try:
            import _mecab
            import mecab
        except ImportError as exc:
            raise KalbertError(f"mecab-ko is not available ({exc})", "pip install python-mecab-ko") from None
        try:
            self._tagger = mecab.MeCab()._tagger
        except Exception as exc:  # the binding raises a bare RuntimeError for a missing dictionary
            raise KalbertError(
                f"mecab-ko could not load its dictionary ({exc})", "pip install python-mecab-ko-dic"
            ) from None
        self._lattice_type = _mecab
        self._cache: dict[str, tuple[str, ...]] = {}

    def split(self, runs: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Return the morphemes of each run (a cache lookup for runs seen before)."""
        if len(self._cache) > _CACHE_LIMIT:  # clear before looking up, never between lookup and use
            self._cache.clear()
        for run in runs:
            if run not in self._cache:
                pieces = self._parse(run)
                self._cache[run] = tuple(pieces) if "".join(pieces) == run else (run,)
        return self._cache

    def _parse(self, text: str) -> list[str]:
        lattice = self._lattice_type.Lattice()
        lattice.add_request_type(self._lattice_type.MECAB_ALLOCATE_SENTENCE)
        lattice.set_sentence(text)
        if not self._tagger.parse(lattice):
            raise KalbertError(f"mecab failed: {self._tagger.what()}")
        lines = lattice.to_string().split("\n")
        return [line.split("\t", 1)[0] for line in lines if "\t" in line]


class JiebaAnalyzer:
    """Splits Han runs into words with jieba (HMM on), cached."""

    name = "jieba"

    def __init__(self) -> None:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        self._tokenizer = jieba.Tokenizer()
        self._cache: dict[str, tuple[str, ...]] = {}

    def split(self, runs: Iterable[str]) -> dict[str, tuple[str, ...]]:
        if len(self._cache) > _CACHE_LIMIT:
            self._cache.clear()
        for run in runs:
            if run not in self._cache:
                self._cache[run] = tuple(self._tokenizer.lcut(run, HMM=True))
        return self._cache


_ANALYZERS = {"mecab": MecabAnalyzer, "jieba": JiebaAnalyzer}
_LANG_ANALYZERS = {"ko": ("mecab", None), "zh": (None, "jieba"), "ko+zh": ("mecab", "jieba")}


@dataclass
class Segmenter:
    """Marks morpheme/word boundaries inside whitespace words with :data:`BOUNDARY`.

    ``hangul`` and ``han`` name the analyzer for that script (``None``: leave the run whole).
    Script changes inside a word (``2016년``) are boundaries too, as SentencePiece would split them.
    With both ``None`` the segmenter is the identity (a plain SentencePiece vocabulary).
    """

    hangul: str | None = "mecab"
    han: str | None = "jieba"
    _analyzers: dict[str, object] = field(default_factory=dict, init=False, repr=False)
    _words: dict[str, str] = field(default_factory=dict, init=False, repr=False)

    @property
    def name(self) -> str:
        return "+".join(a for a in (self.hangul, self.han) if a) or "none"

    @property
    def enabled(self) -> bool:
        return bool(self.hangul or self.han)

    def __getstate__(self) -> dict[str, object]:  # analyzers hold C objects: rebuild them per process
        return {"hangul": self.hangul, "han": self.han, "_analyzers": {}, "_words": {}}

    def _analyzer(self, name: str):
        if name not in self._analyzers:
            self._analyzers[name] = _ANALYZERS[name]()
        return self._analyzers[name]

    def versions(self) -> dict[str, str]:
        """Package versions of the analyzers in use (recorded in vocab cards)."""
        packages = {"mecab": ["python-mecab-ko", "python-mecab-ko-dic"], "jieba": ["jieba"]}
        out = {}
        for analyzer in (self.hangul, self.han):
            for package in packages.get(analyzer or "", []):
                try:
                    out[package] = importlib.metadata.version(package)
                except importlib.metadata.PackageNotFoundError:
                    out[package] = "missing"
        return out

    def _segment_new_words(self, words: set[str]) -> None:
        """Fill the word cache for ``words``: analyse their distinct Hangul/Han runs with each script's analyzer."""
        hangul_only = [w for w in words if _HANGUL_WORD.fullmatch(w)]  # most Korean words: one run
        mixed = words.difference(hangul_only)
        mixed_runs = {w: [_run(groups) for groups in _RUNS.findall(w)] for w in mixed}
        wanted: dict[int, set[str]] = {1: set(hangul_only), 2: set()}
        for runs in mixed_runs.values():
            for kind, run in runs:
                if kind in wanted:
                    wanted[kind].add(run)
        tables: dict[int, dict[str, tuple[str, ...]]] = {}
        for kind, analyzer in ((1, self.hangul), (2, self.han)):
            if analyzer and wanted[kind]:
                tables[kind] = self._analyzer(analyzer).split(wanted[kind])
        hangul_table = tables.get(1)
        for word in hangul_only:
            self._words[word] = BOUNDARY.join(hangul_table[word]) if hangul_table is not None else word
        for word, runs in mixed_runs.items():
            pieces: list[str] = []
            for kind, run in runs:
                table = tables.get(kind)
                pieces.extend(table[run] if table is not None else (run,))
            self._words[word] = BOUNDARY.join(pieces)

    def segment(self, lines: list[str]) -> list[str]:
        """Each line with :data:`BOUNDARY` between the pieces of every whitespace word."""
        if not self.enabled:
            return list(lines)
        split_lines = [line.replace(BOUNDARY, "").split() for line in lines]
        if len(self._words) > _CACHE_LIMIT:  # clear before looking up, never between lookup and use
            self._words.clear()
        cache = self._words
        new = set().union(*split_lines).difference(cache)
        if new:
            self._segment_new_words(new)
        return [" ".join([cache[word] for word in words]) for words in split_lines]

    def split_words(self, lines: list[str]) -> list[list[list[str]]]:
        """For each line, for each whitespace word, its pieces (which concatenate to the word)."""
        return [[word.split(BOUNDARY) for word in line.split()] for line in self.segment(lines)]

    def boundaries(self, line: str) -> set[int]:
        """Character offsets inside ``line`` where a piece starts within a word (for crossing checks)."""
        offsets: set[int] = set()
        position = 0
        for pieces in self.split_words([line])[0]:
            position = line.index(pieces[0][0], position) if pieces and pieces[0] else position
            for piece in pieces[:-1]:
                position += len(piece)
                offsets.add(position)
            position += len(pieces[-1]) if pieces else 0
        return offsets


def make_segmenter(lang: str, method: str = "auto") -> Segmenter:
    """The segmenter for a language (``ko``, ``zh``, ``ko+zh``): ``auto`` analyses each script of the language,
    ``none`` none (plain SentencePiece), ``mecab`` or ``jieba`` only that analyzer's script, leaving the other
    script's words whole to SentencePiece (to measure what the boundaries are worth in one language of a
    bilingual vocabulary)."""
    if lang not in _LANG_ANALYZERS:
        raise KalbertError(f"unknown language {lang!r}", f"use one of {', '.join(_LANG_ANALYZERS)}")
    hangul, han = _LANG_ANALYZERS[lang]
    if method == "none":
        return Segmenter(hangul=None, han=None)
    if method == "auto":
        return Segmenter(hangul=hangul, han=han)
    if method in (hangul, han):
        return Segmenter(hangul=hangul if method == hangul else None, han=han if method == han else None)
    choices = ", ".join(["auto", "none", *(a for a in (hangul, han) if a)])
    known = method in _ANALYZERS
    problem = f"segmenter {method!r} does not analyse {lang} text" if known else f"unknown segmenter {method!r}"
    raise KalbertError(problem, f"use --segmenter {choices}")


_WORKER: Segmenter | None = None


def _init_worker(segmenter: Segmenter) -> None:
    global _WORKER
    _WORKER = segmenter


def _segment_chunk(chunk: list[str]) -> list[str]:
    assert _WORKER is not None
    return _WORKER.segment(chunk)


def _chunks(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def segment_lines(
    lines: Iterable[str], segmenter: Segmenter, processes: int | None = None, chunk_size: int = 5000
) -> Iterator[str]:
    """Segment a stream of lines on ``processes`` cores (default: all), keeping their order."""
    processes = processes or os.cpu_count() or 1
    if not segmenter.enabled:
        yield from lines
        return
    if processes == 1:
        for chunk in _chunks(lines, chunk_size):
            yield from segmenter.segment(chunk)
        return
    context = mp.get_context("fork" if hasattr(os, "fork") else "spawn")
    with context.Pool(processes, initializer=_init_worker, initargs=(segmenter,)) as pool:
        for segmented in pool.imap(_segment_chunk, _chunks(lines, chunk_size), chunksize=1):
            yield from segmented
