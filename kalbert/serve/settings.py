"""What `kalbert serve` loads and the limits it holds every request to (flags, or a YAML file by --config)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kalbert.search.reranking import RERANK_DEPTH

DEFAULT_PORT = 8000


@dataclass
class ServeSettings:
    """Indexes and models to serve, where, and how much one request may ask."""

    index: list[str] = field(default_factory=list)
    """Search index folders (`kalbert search build`), each served under its folder name; the first is /search's
    default."""
    model: list[str] = field(default_factory=list)
    """More sentence-model folders for /v1/embeddings (each index's own model is served too)."""
    host: str = "127.0.0.1"
    """Address to listen on; anything but loopback should come with ``api_key``."""
    port: int = DEFAULT_PORT
    """TCP port to listen on."""
    api_key: str | None = None
    """A key every request but /health must send as ``Authorization: Bearer KEY`` (None: $KALBERT_API_KEY, or
    none)."""
    rerank_model: str | None = None
    """Cross-encoder reranker folder for /rerank and /search (None: models/rerank-ko-zh-small where it exists;
    none: no reranking)."""
    rerank_depth: int = RERANK_DEPTH
    """Retrieved passages the reranker reads per query unless a request says otherwise."""
    max_request_bytes: int = 8 * 1024 * 1024
    """Largest request body accepted (413 above)."""
    max_inputs: int = 256
    """Most texts in one /v1/embeddings or /rerank request, and queries in one /search."""
    max_text_chars: int = 8192
    """Longest embedding input, query or reranked passage, in characters."""
    max_documents: int = 256
    """Most documents in one POST /documents."""
    max_document_chars: int = 1_000_000
    """Longest document text, in characters."""
    max_k: int = 1000
    """Most hits one query may ask for."""
    batch_size: int = 64
    """Texts per forward pass. Texts of concurrent requests are encoded together, up to max_inputs at once,
    longest first, this many at a time."""
    compact_after: int = 50_000
    """Compact an index in the background once this many passages were added or deleted since its engine was
    built (0: never; `kalbert search compact` does it by hand)."""
