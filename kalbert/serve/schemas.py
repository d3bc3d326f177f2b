"""The JSON each endpoint takes, as pydantic models: types are strict (``"k": "5"`` is refused, not read as 5)
and unknown fields are refused, except where a client may send more (OpenAI's embeddings request, a
document's metadata). Limits that are settings are checked by the endpoints."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

InputType = Literal["query", "document", "passage"]


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class EmbeddingRequest(BaseModel):
    """OpenAI's ``POST /v1/embeddings``, plus ``input_type`` (which of the model's prompts to apply)."""

    model_config = ConfigDict(strict=True, extra="ignore")

    input: Any
    model: str
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = None
    user: str | None = None
    input_type: InputType = "document"


class SearchRequest(Strict):
    query: str | list[str]
    k: int = Field(10, ge=1)
    index: str | None = None
    mode: Literal["dense", "bm25", "hybrid"] | None = None
    dense_weight: float | None = Field(None, ge=0.0, le=1.0)
    filter: dict[str, Any] | None = None
    min_score: float | None = None
    one_per_document: bool = False
    rerank: bool | None = None
    rerank_depth: int | None = Field(None, ge=1)


class RerankRequest(Strict):
    """Cohere's and Jina's shape (``documents``); text-embeddings-inference's ``texts`` is read too."""

    query: str
    documents: list[str] | None = None
    texts: list[str] | None = None
    top_n: int | None = Field(None, ge=1)
    return_documents: bool = False
    model: str | None = None


class DocumentsRequest(Strict):
    documents: list[dict[str, Any]]
    index: str | None = None
