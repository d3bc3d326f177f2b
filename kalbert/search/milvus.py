"""The Milvus engine: passages, vectors and metadata in a Milvus collection, through ``pymilvus``.

A file path as URI runs the embedded Milvus Lite (one process, one file); ``http://host:19530`` is a
Milvus server or cluster, which is how an index outgrows one machine. The index folder keeps the record
(model, prompts, URI, collection) and the build's passages; dense queries read hits from Milvus alone, and
documents are added and deleted in Milvus itself, so every process querying the collection sees them at
once. Passages added after the build get row keys from a hash (above the build's rows): no process needs to
ask another for a free one.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.errors import KalbertError
from kalbert.search.changes import AddedDocument
from kalbert.search.store import PassageStore

INSERT_ROWS = 2000
MAX_PASSAGE_BYTES = 65535
CONNECT_SECONDS = 10.0
ADDED_ROWS = 1 << 62
"""row keys of passages added after the build start here (the build's rows count from 0)"""
QUERY_LIMIT = 16384


def _is_server(uri: str) -> bool:
    return re.match(r"^(https?|tcp|grpc)://", uri) is not None


def connect(uri: str):
    """A ``MilvusClient`` for ``uri``, or one line saying the URI does not answer."""
    try:
        from pymilvus import MilvusClient
    except ImportError:
        raise KalbertError("pymilvus is not installed", "pip install 'kalbert[search]'") from None
    if not _is_server(uri):
        if not uri.endswith(".db"):
            raise KalbertError(f"--uri {uri} is neither a server (http://host:19530) nor a Milvus Lite file",
                               "name a file ending in .db, e.g. outputs/milvus.db")
        Path(uri).expanduser().parent.mkdir(parents=True, exist_ok=True)
        uri = str(Path(uri).expanduser().resolve())
    try:
        return MilvusClient(uri=uri, timeout=CONNECT_SECONDS)
    except Exception as exc:  # pymilvus raises MilvusException, but also bare gRPC and OS errors
        message = str(getattr(exc, "message", exc)).splitlines()[0][:200]
        raise KalbertError(f"Milvus at {uri} does not answer ({message})",
                           "check the URI: a file path for Milvus Lite, or http://host:19530 for a server") from None


def collection_name(out: Path) -> str:
    """A valid collection name from the index folder's name (letters, digits, underscores)."""
    name = re.sub(r"\W", "_", out.name, flags=re.ASCII).strip("_") or "kalbert"
    return f"kalbert_{name}"[:255]


def _rows(store: PassageStore, vectors: np.ndarray, start: int, stop: int) -> Iterator[dict[str, Any]]:
    texts = store.passages(start, stop)
    documents: dict[int, dict[str, Any]] = {}
    for offset, text in enumerate(texts):
        row = start + offset
        document, begin, end = (int(v) for v in store.table[row])
        if document not in documents:
            documents[document] = store.document(document)
        record = documents[document]
        encoded = text.encode("utf-8")[:MAX_PASSAGE_BYTES].decode("utf-8", errors="ignore")
        yield {"row": row, "vector": np.asarray(vectors[row], dtype=np.float32).tolist(), "document": record["id"],
               "passage": encoded, "start": begin, "end": end, "metadata": record["metadata"]}


def check_collection(uri: str, out: Path, replace: bool) -> None:
    """Refuse an index whose collection name is taken in Milvus, unless it is to be replaced."""
    client = connect(uri)
    taken = client.has_collection(collection_name(out))
    client.close()
    if taken and not replace:
        raise KalbertError(f"Milvus at {uri} already holds a collection {collection_name(out)}",
                           "pass --overwrite or choose another --out")


def build_milvus(uri: str, collection: str, store: PassageStore, vectors: np.ndarray) -> None:
    """(Re)create ``collection`` and insert every passage with its vector (what is there was checked by
    :func:`check_collection`: an index being replaced, or a killed build's partial insert)."""
    from pymilvus import DataType

    client = connect(uri)
    if client.has_collection(collection):
        client.drop_collection(collection)
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("row", DataType.INT64, is_primary=True)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=int(vectors.shape[1]))
    schema.add_field("document", DataType.VARCHAR, max_length=4096)
    schema.add_field("passage", DataType.VARCHAR, max_length=MAX_PASSAGE_BYTES)
    schema.add_field("start", DataType.INT64)
    schema.add_field("end", DataType.INT64)
    schema.add_field("metadata", DataType.JSON)
    index = client.prepare_index_params()
    index.add_index(field_name="vector", index_type="AUTOINDEX", metric_type="IP")
    client.create_collection(collection, schema=schema, index_params=index)
    for start in range(0, len(store), INSERT_ROWS):
        client.insert(collection, list(_rows(store, vectors, start, min(start + INSERT_ROWS, len(store)))))
    client.flush(collection)
    client.close()


def _added_row(document_id: str, passage: int, write: str) -> int:
    digest = hashlib.blake2b(f"{write}\0{document_id}\0{passage}".encode(), digest_size=8).digest()
    return ADDED_ROWS | (int.from_bytes(digest, "big") & (ADDED_ROWS - 1))


def _text(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


class MilvusSearcher:
    """Queries and writes against a collection; hits carry their passage, document and metadata."""

    FIELDS = ["document", "passage", "start", "end", "metadata"]

    def __init__(self, uri: str, collection: str) -> None:
        self.client = connect(uri)
        if not self.client.has_collection(collection):
            raise KalbertError(f"Milvus at {uri} has no collection {collection}", "rebuild with `kalbert search build`")
        self.client.load_collection(collection)
        self.collection = collection

    def search(self, queries: np.ndarray, k: int, expression: str = "") -> list[list[dict[str, Any]]]:
        """Per query, up to ``k`` dicts: row, score and the stored fields, among the rows ``expression`` keeps."""
        found = self.client.search(self.collection, data=queries.tolist(), limit=k, output_fields=self.FIELDS,
                                   filter=expression, search_params={"metric_type": "IP"})
        return [[{"row": int(hit["row"]) if "row" in hit else int(hit["id"]), "score": float(hit["distance"]),
                  **hit["entity"]} for hit in hits] for hits in found]

    def _rows_of(self, ids: list[str]) -> dict[str, list[int]]:
        found = self.client.query(self.collection, filter=f"document in [{', '.join(map(_text, ids))}]",
                                  output_fields=["row", "document"], limit=QUERY_LIMIT)
        rows: dict[str, list[int]] = {}
        for item in found:
            rows.setdefault(item["document"], []).append(int(item["row"]))
        return rows

    def existing(self, rows: list[int]) -> set[int]:
        """Which of ``rows`` the collection still holds."""
        found = self.client.query(self.collection, filter=f"row in {list(map(int, rows))}", output_fields=["row"],
                                  limit=len(rows))
        return {int(item["row"]) for item in found}

    def document(self, document_id: str) -> dict[str, Any] | None:
        found = self.client.query(self.collection, filter=f"document == {_text(document_id)}",
                                  output_fields=self.FIELDS, limit=QUERY_LIMIT)
        if not found:
            return None
        found.sort(key=lambda item: item["start"])
        return {"id": document_id, "metadata": found[0]["metadata"] or {},
                "passages": [{"passage": f["passage"], "start": f["start"], "end": f["end"]} for f in found]}

    def add_documents(self, documents: list[AddedDocument]) -> list[dict[str, Any]]:
        """Insert the documents' passages, then delete the passages of the versions they replace (killed in
        between, a document is there twice until it is written again, never missing)."""
        old = self._rows_of([document.id for document in documents])
        write = uuid.uuid4().hex
        rows = [{"row": _added_row(document.id, i, write), "vector": vector.tolist(), "document": document.id,
                 "passage": document.text[a:b].encode("utf-8")[:MAX_PASSAGE_BYTES].decode("utf-8", errors="ignore"),
                 "start": a, "end": b, "metadata": document.metadata}
                for document in documents for i, ((a, b), vector) in enumerate(zip(document.spans, document.vectors,
                                                                                   strict=True))]
        self.client.insert(self.collection, rows)
        stale = [row for document_rows in old.values() for row in document_rows]
        if stale:
            self.client.delete(self.collection, ids=stale)
        self.client.flush(self.collection)
        return [{"id": d.id, "status": "replaced" if d.id in old else "added", "passages": len(d.spans)}
                for d in documents]

    def delete_documents(self, ids: list[str]) -> list[dict[str, Any]]:
        """Delete documents by id; an id the collection does not hold refuses the whole delete."""
        rows = self._rows_of(ids)
        missing = [document_id for document_id in ids if document_id not in rows]
        if missing:
            raise KalbertError(f"no document {missing[0]!r} in Milvus collection {self.collection}",
                               "nothing was deleted; give ids the index holds")
        self.client.delete(self.collection, ids=[row for found in rows.values() for row in found])
        self.client.flush(self.collection)
        return [{"id": document_id, "status": "deleted"} for document_id in ids]
