"""One generation of an index's passages, opened read-only: the store, vectors, engine and BM25 that
`kalbert search build` (or a compaction) wrote, and the lookups a changing index needs (documents by id,
metadata by field), each built on first use.

Generation 0 is the build's files at the top of the index folder; a compaction writes generation N into
``gen-N/`` and names it in ``kalbert.json`` (``base``), beside its change log (``changes``).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.errors import KalbertError
from kalbert.search.build import EMBEDDINGS, LEXICAL
from kalbert.search.engines import FAISS_ENGINES
from kalbert.search.filters import MetadataColumns
from kalbert.search.store import PassageStore

CHANGES = "changes.log"
LENGTH_SAMPLE = 200
"""base passages tokenized to estimate their average BM25 length (for scoring documents added since; a
sample's mean is within a few percent of the whole's, and BM25 moves little with it)"""


def corrupt(folder: Path, what: str) -> KalbertError:
    return KalbertError(f"search index {folder} is corrupted: {what}",
                        "rebuild it with `kalbert search build` (the build writes it whole or not at all)")


def generation_folder(root: Path, record: dict[str, Any]) -> Path:
    return root / record.get("base", "")


def changes_path(root: Path, record: dict[str, Any]) -> Path:
    return root / record.get("changes", CHANGES)


class Base:
    """The passages of one generation; everything but the store and the vectors opens on first use."""

    def __init__(self, root: Path, record: dict[str, Any]) -> None:
        self.root, self.record = root, record
        self.folder = generation_folder(root, record)
        self.engine: str = record["engine"]
        self.store = PassageStore(self.folder)
        try:
            self.embeddings = np.load(self.folder / EMBEDDINGS, mmap_mode="r")
        except (OSError, ValueError, EOFError) as exc:
            raise corrupt(root, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
        if self.embeddings.shape != (len(self.store), record["dim"]):
            raise corrupt(root, f"{EMBEDDINGS} holds {self.embeddings.shape}, expected "
                                f"({len(self.store)}, {record['dim']})")
        self._lock = threading.Lock()
        self._dense = self._bm25 = self._ids = self._columns = self._documents = self._length = None

    def __len__(self) -> int:
        return len(self.store)

    @property
    def dense(self):
        """The engine's searcher."""
        with self._lock:
            if self._dense is None:
                params = self.record["engine_params"]
                if self.engine in FAISS_ENGINES:
                    from kalbert.search.engines import FaissSearcher

                    self._dense = FaissSearcher(self.engine, self.folder / f"{self.engine}.faiss", params,
                                                self.embeddings)
                else:
                    from kalbert.search.milvus import MilvusSearcher

                    self._dense = MilvusSearcher(params["uri"], params["collection"])
            return self._dense

    @property
    def lexical(self) -> bool:
        return self.record["lexical"] == "bm25"

    @property
    def bm25(self):
        if not self.lexical:
            raise KalbertError(f"{self.root} has no BM25 index", "rebuild it with --lexical bm25")
        with self._lock:
            if self._bm25 is None:
                from kalbert.text.lexical import BM25Index

                self._bm25 = BM25Index.load(self.folder / LEXICAL)
            return self._bm25

    @property
    def document_of(self) -> np.ndarray:
        """The document row of every passage row, in memory (int64)."""
        with self._lock:
            if self._documents is None:
                self._documents = np.asarray(self.store.table["document"], dtype=np.int64)
            return self._documents

    def ids(self) -> dict[str, list[int]]:
        """Document id -> its document rows (ids repeat where the sources repeated them)."""
        with self._lock:
            if self._ids is None:
                ids: dict[str, list[int]] = {}
                for row, record in enumerate(self.store.documents()):
                    ids.setdefault(record["id"], []).append(row)
                self._ids = ids
            return self._ids

    def columns(self) -> MetadataColumns:
        with self._lock:
            if self._columns is None:
                self._columns = MetadataColumns(record["metadata"] for record in self.store.documents())
            return self._columns

    def passage_rows(self, document: int) -> range:
        """The passage rows of document row ``document`` (a store holds passages in document order)."""
        column = self.document_of
        return range(int(np.searchsorted(column, document, "left")), int(np.searchsorted(column, document, "right")))

    def average_length(self) -> float:
        """The average BM25 length of the passages, estimated on an evenly spaced sample."""
        with self._lock:
            if self._length is None:
                from kalbert.text.lexical import lexical_tokens

                rows = np.unique(np.linspace(0, len(self) - 1, min(LENGTH_SAMPLE, len(self))).astype(int))
                lengths = [len(lexical_tokens(self.store.passages(int(r), int(r) + 1)[0])) for r in rows]
                self._length = max(1.0, float(np.mean(lengths))) if lengths else 1.0
            return self._length
