"""The change log of an index: documents added, replaced and deleted since its passages were built, one
durable line per write, replayed when the index opens.

A line is ``CRC32 JSON``, written with one ``write`` and ``fsync``'d before the writer returns, so an
acknowledged write survives a kill -9 or a power cut, and a write appears whole or not at all: a kill in the
middle leaves a torn last line, which was never acknowledged, is skipped by readers and cut off by the next
writer. Writers hold an exclusive ``flock`` on the folder's :data:`WRITER_LOCK` while they append, so several
processes of one machine can share an index folder; readers follow the log by its size. Added documents carry
their passages' spans and float16 vectors, so replaying needs no model.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.errors import KalbertError

WRITER_LOCK = ".writes.lock"
"""the file writers of an index folder lock"""


@dataclass(frozen=True)
class AddedDocument:
    """A document as the log holds it: its text, metadata, passage spans and their unit vectors."""

    id: str
    text: str
    metadata: dict[str, Any]
    spans: list[tuple[int, int]]
    vectors: np.ndarray = field(repr=False)
    """float32 ``[len(spans), dim]``"""

    def to_json(self) -> dict[str, Any]:
        data = base64.b64encode(np.ascontiguousarray(self.vectors, dtype="<f2").tobytes()).decode("ascii")
        return {"id": self.id, "text": self.text, "metadata": self.metadata, "spans": [list(s) for s in self.spans],
                "vectors": data}

    @classmethod
    def from_json(cls, item: dict[str, Any], dim: int) -> AddedDocument:
        vectors = np.frombuffer(base64.b64decode(item["vectors"]), dtype="<f2").astype(np.float32)
        return cls(item["id"], item["text"], item["metadata"], [tuple(s) for s in item["spans"]],
                   vectors.reshape(len(item["spans"]), dim))


def add_record(documents: list[AddedDocument]) -> dict[str, Any]:
    return {"op": "add", "documents": [document.to_json() for document in documents]}


def delete_record(ids: list[str]) -> dict[str, Any]:
    return {"op": "delete", "ids": ids}


def _line(record: dict[str, Any]) -> bytes:
    payload = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return f"{zlib.crc32(payload):08x} ".encode("ascii") + payload + b"\n"


def _parse(line: bytes) -> dict[str, Any] | None:
    """The record of a whole line, or None where its checksum or JSON is wrong."""
    crc, _, payload = line.partition(b" ")
    try:
        if int(crc, 16) != zlib.crc32(payload):
            return None
        record = json.loads(payload)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def folder_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``: one writer at a time among the processes of a machine."""
    import fcntl

    with open(path, "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


class ChangeLog:
    """One index generation's log file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def read(self, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """The records after byte ``offset`` up to the last whole line, and the offset after that line (a torn
        last line, a write in progress or killed, is left for later). A damaged line before the end is an error."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(offset)
                data = handle.read()
        except FileNotFoundError:
            return [], offset
        records, position = [], 0
        lines = data.split(b"\n")
        for number, line in enumerate(lines[:-1]):  # the last piece has no newline: empty, or torn
            record = _parse(line)
            if record is None:
                if number == len(lines) - 2:  # a damaged last line is a torn write too (never acknowledged)
                    break
                raise KalbertError(f"the change log {self.path} is damaged at byte {offset + position}",
                                   "restore the index folder from a backup, or rebuild it with `kalbert search build`")
            records.append(record)
            position += len(line) + 1
        return records, offset + position

    def append(self, record: dict[str, Any], after: int) -> int:
        """Write ``record`` durably after byte ``after`` (the end of the last whole line: a torn tail there is
        cut off first) and return the offset after it. The caller holds the index's :func:`folder_lock`."""
        created = not self.path.exists()
        with open(self.path, "ab") as handle:
            if handle.tell() != after:
                handle.truncate(after)
            handle.write(_line(record))
            handle.flush()
            os.fsync(handle.fileno())
            end = handle.tell()
        if created:  # the new file's name must survive a crash too
            _fsync_folder(self.path.parent)
        return end

    def copy_after(self, offset: int, target: Path) -> None:
        """Write the whole lines after ``offset`` to a new log ``target``, durably (compaction carries the writes
        that came in while it ran)."""
        records, _ = self.read(offset)
        with open(target, "wb") as handle:
            handle.write(b"".join(_line(record) for record in records))
            handle.flush()
            os.fsync(handle.fileno())
        _fsync_folder(target.parent)
