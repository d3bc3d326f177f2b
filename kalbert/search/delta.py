"""The changes since an index's base generation, in memory: passages of added documents (with their vectors
and BM25 postings) and which passages, of the base and of the added ones, are deleted or replaced.

Readers never lock: each write publishes a new :class:`Snapshot`, and a query reads the one it started with.
Added passages live in append-only buffers that a snapshot sees up to its ``size``; the masks of dead passages
are copied on write. The added passages are searched exactly (they are few until a compaction folds them into
the base), and scored by BM25 with the base's statistics (its passage count and document frequencies, the
average length estimated on a sample of it), the scale the base's own scores are on, so both rank together.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kalbert.search.changes import AddedDocument
from kalbert.search.filters import Filter, matches

K1, B = 1.5, 0.75
"""BM25 parameters: bm25s's lucene defaults, which the base's BM25 index uses (kalbert.text.lexical)"""


@dataclass(frozen=True)
class AddedPassage:
    document: AddedDocument
    start: int
    end: int

    @property
    def text(self) -> str:
        return self.document.text[self.start:self.end]


@dataclass
class Postings:
    """BM25 postings of the added passages: token -> (row, count) pairs, and each passage's length."""

    tokens: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    lengths: list[int] = field(default_factory=list)

    def add(self, tokens: list[str]) -> None:
        row = len(self.lengths)
        for token, count in Counter(tokens).items():
            self.tokens.setdefault(token, []).append((row, count))
        self.lengths.append(len(tokens))


@dataclass(frozen=True)
class Snapshot:
    """The changes up to one point of the log, as queries see them."""

    base_size: int
    base_dead: np.ndarray | None
    """bool over base passage rows: deleted or replaced (None: none is)"""
    deleted_documents: frozenset[int]
    """base document rows deleted or replaced"""
    size: int
    """added passages visible (rows ``base_size`` to ``base_size + size - 1``)"""
    dead: np.ndarray
    """bool over the added passages: deleted or replaced since"""
    vectors: np.ndarray
    """float32 buffer whose first ``size`` rows are the added passages' vectors"""
    passages: list[AddedPassage]
    documents: dict[str, AddedDocument]
    """the added documents still there, by id"""
    postings: Postings | None

    @property
    def live(self) -> int:
        """Passages a query can find."""
        base = self.base_size - (int(self.base_dead.sum()) if self.base_dead is not None else 0)
        return base + self.size - int(self.dead[: self.size].sum())

    def passage(self, row: int) -> AddedPassage:
        return self.passages[row - self.base_size]

    def allowed(self, query_filter: Filter) -> np.ndarray:
        """Bool over the added passages: alive and passing ``query_filter``."""
        allowed = ~self.dead[: self.size]
        if query_filter:
            passes = {id(document): matches(document.metadata, query_filter) for document in self.documents.values()}
            allowed &= np.array([passes.get(id(p.document), False) for p in self.passages[: self.size]], dtype=bool)
        return allowed

    def fields(self) -> set[str]:
        return {name for document in self.documents.values() for name in document.metadata}

    def bm25(self, tokens: list[str], base_frequencies: Callable[[list[str]], np.ndarray],
             average_length: float) -> np.ndarray:
        """BM25 (lucene) scores of the added passages for a query's tokens with the base's statistics (its
        passages and document frequencies, as the base's own scores have them), so both rank on one scale."""
        scores = np.zeros(self.size, dtype=np.float32)
        if not self.size or self.postings is None or not tokens:
            return scores
        frequencies = dict(zip(tokens, base_frequencies(tokens), strict=True))
        lengths = np.asarray(self.postings.lengths[: self.size], dtype=np.float32)
        norm = K1 * (1 - B + B * lengths / average_length)
        for token in tokens:  # repeated query tokens count again, as in bm25s
            found = [(row, count) for row, count in self.postings.tokens.get(token, ()) if row < self.size]
            if not found:
                continue
            rows, counts = (np.asarray(column) for column in zip(*found, strict=True))
            df = float(frequencies[token])
            idf = math.log(1 + (self.base_size - df + 0.5) / (df + 0.5))
            scores[rows] += idf * counts / (norm[rows] + counts)
        return scores


class Delta:
    """The changes since one base, applied record by record (under the writer's lock, or while opening)."""

    def __init__(self, base_size: int, dim: int, base_ids: Callable[[], dict[str, list[int]]],
                 base_rows: Callable[[int], range], lexical: bool) -> None:
        self.base_size, self.dim = base_size, dim
        self._base_ids, self._base_rows = base_ids, base_rows
        self._base_dead: np.ndarray | None = None
        self._deleted: frozenset[int] = frozenset()
        self._dead = np.zeros(0, dtype=bool)
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self._passages: list[AddedPassage] = []
        self._documents: dict[str, AddedDocument] = {}
        self._rows: dict[str, range] = {}
        self._postings = Postings() if lexical else None
        self.offset = 0
        self.snapshot = self._publish()

    def has(self, document_id: str) -> bool:
        """Whether a query can find document ``document_id`` now."""
        if document_id in self._documents:
            return True
        return any(row not in self._deleted for row in self._base_ids().get(document_id, ()))

    def _remove(self, document_id: str, base_dead: np.ndarray | None, dead: np.ndarray) -> np.ndarray | None:
        if self._documents.pop(document_id, None) is not None:
            span = self._rows.pop(document_id)
            dead[span.start:span.stop] = True
        rows = [row for row in self._base_ids().get(document_id, ()) if row not in self._deleted]
        if rows:
            base_dead = np.zeros(self.base_size, dtype=bool) if base_dead is None else base_dead
            for row in rows:
                span = self._base_rows(row)
                base_dead[span.start:span.stop] = True
            self._deleted = self._deleted | frozenset(rows)
        return base_dead

    def _grow(self, extra: int) -> None:
        needed = len(self._passages) + extra
        if needed > len(self._vectors):  # a new buffer: snapshots keep reading the old one
            grown = np.zeros((max(needed, 2 * len(self._vectors), 256), self.dim), dtype=np.float32)
            grown[: len(self._passages)] = self._vectors[: len(self._passages)]
            self._vectors = grown

    def apply(self, record: dict[str, Any], offset: int) -> None:
        """Apply one log record (read up to ``offset``) and publish the snapshot after it."""
        base_dead = None if self._base_dead is None else self._base_dead.copy()
        added: list[AddedDocument] = []
        if record["op"] == "add":
            added = [AddedDocument.from_json(item, self.dim) for item in record["documents"]]
            removed = [document.id for document in added]
        else:
            removed = list(record["ids"])
        extra = sum(len(document.spans) for document in added)
        dead = np.zeros(len(self._passages) + extra, dtype=bool)
        dead[: len(self._dead)] = self._dead
        for document_id in removed:
            base_dead = self._remove(document_id, base_dead, dead)
        self._grow(extra)
        for document in added:
            first = len(self._passages)
            self._vectors[first: first + len(document.spans)] = document.vectors
            for start, end in document.spans:
                passage = AddedPassage(document, start, end)
                self._passages.append(passage)
                if self._postings is not None:
                    from kalbert.text.lexical import lexical_tokens

                    self._postings.add(lexical_tokens(passage.text))
            self._documents[document.id] = document
            self._rows[document.id] = range(first, len(self._passages))
        self._base_dead, self._dead, self.offset = base_dead, dead, offset
        self.snapshot = self._publish()

    def _publish(self) -> Snapshot:
        return Snapshot(self.base_size, self._base_dead, self._deleted, len(self._passages), self._dead,
                        self._vectors, self._passages, dict(self._documents), self._postings)
