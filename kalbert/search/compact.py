"""Compaction: an index's base generation and the changes since, folded into a new generation.

HNSW cannot remove a vector and every engine searches deleted passages only to skip them, while added ones
are searched exactly beside the engine, so a long-lived index is compacted now and then: the passages still
there (the base's, in order, then the added ones) are written as a new store with their vectors, the engine
and BM25 are built again over them, and ``kalbert.json`` is replaced to name the new generation and a new
change log that holds the writes made while it ran. Replacing the record is the one atomic step: killed
before it, the index is the old generation with its log; after it, the new one. The previous generation's
files stay until the next compaction, for readers that still have them open.
"""

from __future__ import annotations

import dataclasses
import itertools
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.search.base import CHANGES, Base, changes_path, generation_folder
from kalbert.search.build import EMBEDDINGS, LEXICAL
from kalbert.search.delta import Snapshot
from kalbert.search.engines import EngineSettings, build_faiss
from kalbert.search.store import DOCUMENT_OFFSETS, DOCUMENTS, PASSAGE_OFFSETS, PASSAGE_TABLE, PASSAGES, write_passages

GENERATION_FILES = (PASSAGES, PASSAGE_OFFSETS, PASSAGE_TABLE, DOCUMENTS, DOCUMENT_OFFSETS, EMBEDDINGS, LEXICAL,
                    "exact.faiss", "hnsw.faiss", "ivfpq.faiss")
READ_CHUNK = 8192


def engine_settings(record: dict[str, Any]) -> EngineSettings:
    """The engine settings the index was built with (records from before --refine say rerank)."""
    recorded = dict(record.get("config", {}).get("engine_settings") or {})
    if "rerank" in recorded:
        recorded.setdefault("refine", recorded.pop("rerank"))
    names = {f.name for f in dataclasses.fields(EngineSettings)}
    return EngineSettings(**{key: value for key, value in recorded.items() if key in names})


def _base_documents(base: Base, snapshot: Snapshot) -> Iterator[tuple[dict[str, Any], list[tuple[str, int, int]]]]:
    """The base's documents still there, with their passages, in row order (read in chunks)."""
    table, column = base.store.table, base.document_of
    current, passages = -1, []
    for start in range(0, len(base), READ_CHUNK):
        stop = min(start + READ_CHUNK, len(base))
        for row, text in zip(range(start, stop), base.store.passages(start, stop), strict=True):
            document = int(column[row])
            if document != current:
                if passages:
                    yield base.store.document(current), passages
                current, passages = document, []
            if document not in snapshot.deleted_documents:
                passages.append((text, int(table[row]["start"]), int(table[row]["end"])))
    if passages:
        yield base.store.document(current), passages


def _kept_vectors(base: Base, snapshot: Snapshot) -> Iterator[np.ndarray]:
    alive = np.ones(len(base), dtype=bool) if snapshot.base_dead is None else ~snapshot.base_dead
    for start in range(0, len(base), READ_CHUNK * 8):
        stop = min(start + READ_CHUNK * 8, len(base))
        yield np.asarray(base.embeddings[start:stop][alive[start:stop]], dtype=np.float16)
    for document in snapshot.documents.values():
        yield document.vectors.astype(np.float16)


def write_generation(base: Base, snapshot: Snapshot, generation: int) -> dict[str, Any]:
    """Write generation ``generation`` (the base less its deleted passages, plus the added documents) into its
    folder and return the record that names it (not yet written)."""
    started = time.perf_counter()
    record = base.record
    name = f"gen-{generation:06d}"
    target = base.root / name
    shutil.rmtree(target, ignore_errors=True)  # a compaction killed before its commit
    target.mkdir()
    added = (({"id": d.id, "metadata": d.metadata}, [(d.text[a:b], a, b) for a, b in d.spans])
             for d in snapshot.documents.values())
    documents, passages = write_passages(target, itertools.chain(_base_documents(base, snapshot), added))
    matrix = np.lib.format.open_memmap(target / EMBEDDINGS, mode="w+", dtype=np.float16,
                                       shape=(passages, record["dim"]))
    row = 0
    for block in _kept_vectors(base, snapshot):
        matrix[row: row + len(block)] = block
        row += len(block)
    matrix.flush()
    del matrix
    vectors = np.load(target / EMBEDDINGS, mmap_mode="r")
    params = build_faiss(base.engine, vectors, target / f"{base.engine}.faiss", engine_settings(record))
    if base.lexical:
        from kalbert.search.store import PassageStore
        from kalbert.text.lexical import BM25Index

        BM25Index.build(list(PassageStore(target).iter_passages())).save(target / LEXICAL)
    dead = 0 if snapshot.base_dead is None else int(snapshot.base_dead.sum())
    previous = {"base": record.get("base", ""), "changes": record.get("changes", CHANGES)}
    return {**record, "base": name, "changes": f"changes-{generation:06d}.log", "generation": generation,
            "previous": previous, "passages": passages, "documents": documents, "engine_params": params,
            "compacted": {"seconds": round(time.perf_counter() - started, 1), "deleted_passages": dead,
                          "added_documents": len(snapshot.documents)}}


def remove_generation(root: Path, record: dict[str, Any]) -> None:
    """Delete a generation's files and its change log (one two compactions old)."""
    folder = generation_folder(root, record)
    if folder != root:
        shutil.rmtree(folder, ignore_errors=True)
    else:  # generation 0: the build's files beside kalbert.json
        for name in GENERATION_FILES:
            path = root / name
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    changes_path(root, record).unlink(missing_ok=True)
