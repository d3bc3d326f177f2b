"""Documents written to an open index: checked, cut into passages as the build cut them (the same token
budget and overlap), and encoded by the index's model with its passage prompt.

Everything that can be refused is refused before anything is encoded or written, so a write applies whole
or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import numpy as np

from kalbert.errors import KalbertError
from kalbert.precision import autocast
from kalbert.search.changes import AddedDocument
from kalbert.search.documents import Document
from kalbert.search.model import model_prompts
from kalbert.search.passages import split_passages, token_counter

ENCODE_BATCH = 64


def as_document(item: Document | dict[str, Any], position: int) -> Document:
    """A document from a :class:`Document` or a JSON object (``id``, ``text``, every other field metadata)."""
    if isinstance(item, Document):
        document = item
    elif isinstance(item, dict):
        if "id" not in item or not isinstance(item["id"], str | int) or isinstance(item["id"], bool):
            raise KalbertError(f"document {position} has no 'id' string", 'give {"id": "...", "text": "..."}')
        if not isinstance(item.get("text"), str):
            raise KalbertError(f"document {position} ({item['id']}) has no 'text' string",
                               'give {"id": "...", "text": "..."}; other fields are kept as metadata')
        document = Document(str(item["id"]), item["text"], {k: v for k, v in item.items() if k not in ("id", "text")})
    else:
        raise KalbertError(f"document {position} is not an object", 'give {"id": "...", "text": "..."}')
    if not document.id.strip():
        raise KalbertError(f"document {position} has an empty id", "give every document an id")
    if not document.text.strip():
        raise KalbertError(f"document {position} ({document.id}): the text is empty", "give it text, or delete it")
    try:
        json.dumps(document.metadata)
    except (TypeError, ValueError):
        raise KalbertError(f"document {position} ({document.id}): its metadata is not JSON",
                           "give metadata as JSON values") from None
    return document


def check_documents(items: Iterable[Document | dict[str, Any]]) -> list[Document]:
    """The documents of one write, each checked; an id given twice is refused (which one would stay?)."""
    documents = [as_document(item, position) for position, item in enumerate(items, start=1)]
    if not documents:
        raise KalbertError("no documents to add", 'give {"documents": [{"id": "...", "text": "..."}]}')
    seen: set[str] = set()
    for document in documents:
        if document.id in seen:
            raise KalbertError(f"document id {document.id!r} is given twice in one write", "give each id once")
        seen.add(document.id)
    return documents


def encode_documents(model, documents: list[Document], passage_tokens: int, stride: int,
                     bf16: bool) -> list[AddedDocument]:
    """Each document's passages (spans) and their unit vectors."""
    count = token_counter(model)
    spans = [split_passages(document.text, count, passage_tokens, stride) for document in documents]
    texts = [document.text[a:b] for document, pieces in zip(documents, spans, strict=True) for a, b in pieces]
    with autocast("cpu", bf16):
        vectors = model.encode(texts, batch_size=ENCODE_BATCH, prompt_name=model_prompts(model).passage_name,
                               convert_to_numpy=True, normalize_embeddings=True)
    vectors = np.asarray(vectors, dtype=np.float32)
    added, first = [], 0
    for document, pieces in zip(documents, spans, strict=True):
        added.append(AddedDocument(document.id, document.text, document.metadata, pieces,
                                   vectors[first: first + len(pieces)]))
        first += len(pieces)
    return added
