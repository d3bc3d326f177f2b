"""Passages and their documents on disk, read by row without loading the corpus.

``passages.txt`` holds one passage per line (newlines inside a passage written as U+2028 and restored on
reading) with byte offsets in ``passages.offsets.npy``; ``passages.npy`` holds each passage's document row
and character span; ``documents.jsonl`` (with ``documents.offsets.npy``) each document's id and metadata.
Exact duplicate passages are written once (the first document that holds one owns it).
"""

from __future__ import annotations

import hashlib
import json
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.errors import KalbertError
from kalbert.search.documents import Document
from kalbert.search.passages import Span

PASSAGES, PASSAGE_OFFSETS, PASSAGE_TABLE = "passages.txt", "passages.offsets.npy", "passages.npy"
DOCUMENTS, DOCUMENT_OFFSETS = "documents.jsonl", "documents.offsets.npy"
_LINE_BREAK = "\u2028"
_TABLE = np.dtype([("document", np.int64), ("start", np.int64), ("end", np.int64)])


@dataclass(frozen=True)
class StoreCounts:
    documents: int
    passages: int
    duplicates: int
    """passages left out because an identical one was already written"""


def write_store(folder: Path, documents: Iterable[tuple[Document, list[Span]]], limit: int | None) -> StoreCounts:
    """Write the passages of ``documents`` (each with its spans), at most ``limit`` of them."""
    seen: set[bytes] = set()
    duplicates = 0

    def unseen(document: Document, spans: list[Span]) -> Iterator[tuple[str, int, int]]:
        nonlocal duplicates
        for start, end in spans:
            text = document.text[start:end]
            key = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
            if key in seen:
                duplicates += 1
                continue
            seen.add(key)
            yield text, start, end

    records = (({"id": document.id, "metadata": document.metadata}, unseen(document, spans))
               for document, spans in documents)
    documents_written, passages_written = write_passages(folder, records, limit)
    return StoreCounts(documents_written, passages_written, duplicates)


def write_passages(folder: Path, documents: Iterable[tuple[dict[str, Any], Iterable[tuple[str, int, int]]]],
                   limit: int | None = None) -> tuple[int, int]:
    """Write documents (``{"id", "metadata"}`` records, each with its (text, start, end) passages; one without
    passages is left out), at most ``limit`` passages; return how many documents and passages were written."""
    passage_offsets, document_offsets = array("q", [0]), array("q", [0])
    table: list[tuple[int, int, int]] = []
    with open(folder / PASSAGES, "wb") as passages, open(folder / DOCUMENTS, "wb") as docs:
        for record, items in documents:
            if limit is not None and len(table) >= limit:
                break
            row = len(document_offsets) - 1
            kept = 0
            for text, start, end in items:
                passages.write(text.replace("\n", _LINE_BREAK).replace("\r", " ").encode("utf-8") + b"\n")
                passage_offsets.append(passages.tell())
                table.append((row, start, end))
                kept += 1
                if limit is not None and len(table) >= limit:
                    break
            if kept:
                docs.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
                document_offsets.append(docs.tell())
    np.save(folder / PASSAGE_OFFSETS, np.frombuffer(passage_offsets, dtype=np.int64))
    np.save(folder / DOCUMENT_OFFSETS, np.frombuffer(document_offsets, dtype=np.int64))
    np.save(folder / PASSAGE_TABLE, np.array(table, dtype=_TABLE))
    return len(document_offsets) - 1, len(table)


def _lines(path: Path, offsets: np.ndarray, start: int, stop: int) -> list[str]:
    with open(path, "rb") as handle:
        handle.seek(int(offsets[start]))
        data = handle.read(int(offsets[stop] - offsets[start]))
    return data.decode("utf-8").split("\n")[: stop - start]


class PassageStore:
    """Read access to a store folder; every file is checked against the others on opening."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        try:
            self.offsets = np.load(folder / PASSAGE_OFFSETS)
            self.table = np.load(folder / PASSAGE_TABLE, mmap_mode="r")
            self.document_offsets = np.load(folder / DOCUMENT_OFFSETS)
        except (OSError, ValueError, EOFError) as exc:
            raise KalbertError(f"search index {folder} is corrupted: {str(exc).splitlines()[0]}",
                               "rebuild it with `kalbert search build`") from None
        sizes = [(PASSAGES, self.offsets), (DOCUMENTS, self.document_offsets)]
        for name, offsets in sizes:
            path = folder / name
            if not path.is_file() or path.stat().st_size != offsets[-1]:
                raise KalbertError(f"search index {folder} is corrupted: {name} does not match its offsets",
                                   "rebuild it with `kalbert search build`")
        if len(self.table) != len(self.offsets) - 1:
            raise KalbertError(f"search index {folder} is corrupted: {PASSAGE_TABLE} holds {len(self.table)} rows "
                               f"for {len(self.offsets) - 1} passages", "rebuild it with `kalbert search build`")

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def passages(self, start: int, stop: int) -> list[str]:
        return [line.replace(_LINE_BREAK, "\n") for line in _lines(self.folder / PASSAGES, self.offsets, start, stop)]

    def iter_passages(self, chunk: int = 65536) -> Iterator[str]:
        for start in range(0, len(self), chunk):
            yield from self.passages(start, min(start + chunk, len(self)))

    def documents(self) -> Iterator[dict[str, Any]]:
        """Every document record (id, metadata), in row order."""
        with open(self.folder / DOCUMENTS, "rb") as handle:
            for line in handle:
                yield json.loads(line)

    def document(self, row: int) -> dict[str, Any]:
        return json.loads(_lines(self.folder / DOCUMENTS, self.document_offsets, row, row + 1)[0])

    def passage(self, row: int) -> tuple[str, dict[str, Any], int, int]:
        """(text, document record, start, end) of passage ``row``."""
        document, start, end = (int(v) for v in self.table[row])
        return self.passages(row, row + 1)[0], self.document(document), start, end
