"""``POST /v1/embeddings`` as OpenAI defines it: ``input`` a string or a list of strings, ``encoding_format``
float or base64 (little-endian float32, what OpenAI clients ask for by default), ``dimensions`` where the model
was trained for that size (a Matryoshka prefix, scaled back to unit length).

``input_type`` says which of the model's prompts applies: ``document`` (the default, also ``passage``) gives
the vectors an index built by this model holds, ``query`` those its queries are encoded to. OpenAI's own
models have one space for both, so a client that cannot send the field still gets vectors that match the
index; a retrieval model ranks better when queries say ``query``."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from kalbert.serve.errors import ApiError
from kalbert.serve.schemas import EmbeddingRequest
from kalbert.serve.service import ServedModel
from kalbert.serve.settings import ServeSettings


def input_texts(value: Any, settings: ServeSettings) -> list[str]:
    """The request's texts, or a 400 saying what is wrong with ``input``."""
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts:
        raise ApiError(400, "'input' must be a string or a non-empty list of strings", "input")
    if any(isinstance(text, int | list) and not isinstance(text, bool) for text in texts):
        raise ApiError(400, "'input' holds token ids; this server reads text only: send the strings", "input")
    if len(texts) > settings.max_inputs:
        raise ApiError(400, f"'input' holds {len(texts)} texts, more than the {settings.max_inputs} allowed in one "
                            "request (max_inputs): send them in several requests", "input")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ApiError(400, f"'input[{i}]' is not a string", "input")
        if not text.strip():
            raise ApiError(400, f"'input[{i}]' is empty", "input")
        if len(text) > settings.max_text_chars:
            raise ApiError(400, f"'input[{i}]' has {len(text)} characters, more than the {settings.max_text_chars} "
                                "allowed (max_text_chars)", "input")
    return texts


def check_dimensions(served: ServedModel, dimensions: int | None) -> int:
    if dimensions is None:
        return served.dims[0]
    if dimensions not in served.dims:
        trained = ", ".join(map(str, served.dims))
        raise ApiError(400, f"model {served.name!r} gives {served.dims[0]} dimensions and was trained for "
                            f"{trained}; 'dimensions' must be one of them, got {dimensions}", "dimensions")
    return dimensions


def prompt_name(served: ServedModel, input_type: str) -> str | None:
    prompts = served.prompts
    return prompts.query_name if input_type == "query" else prompts.passage_name


def response(served: ServedModel, request: EmbeddingRequest, vectors: np.ndarray, tokens: int,
             dimensions: int) -> dict[str, Any]:
    """OpenAI's response body for ``vectors`` cut to ``dimensions`` (and made unit length again)."""
    if dimensions < vectors.shape[1]:
        vectors = vectors[:, :dimensions]
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    vectors = np.ascontiguousarray(vectors, dtype="<f4")
    if request.encoding_format == "base64":
        encoded = [base64.b64encode(row.tobytes()).decode("ascii") for row in vectors]
    else:
        encoded = vectors.tolist()
    return {"object": "list", "model": served.name,
            "data": [{"object": "embedding", "index": i, "embedding": e} for i, e in enumerate(encoded)],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
