"""`kalbert rerank score`: (query, passages) requests from a JSONL file scored by a reranker, for scripts.

Each input line is ``{"query": ..., "passages": [...]}`` (other keys are kept); each output line is the same object
with ``"scores"`` (one per passage, in the given order, higher = more relevant) and ``"ranking"`` (passage indices,
best first). The whole file is read and checked before the model loads, so a bad line costs one line, not a load.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.errors import KalbertError
from kalbert.io import json_lines
from kalbert.rerank.model import Reranker, check_passages

SHAPE = '{"query": "...", "passages": ["...", ...]}'


def read_requests(path: str | Path) -> list[dict[str, Any]]:
    """The requests of a JSONL file; a malformed line, a blank query or passage, or no passages: one line."""
    requests = []
    for no, item in json_lines(path):
        if not (isinstance(item, dict) and isinstance(item.get("query"), str)
                and isinstance(item.get("passages"), list)):
            raise KalbertError(f"{path} line {no} is not a JSON object with a string \"query\" and a list "
                               "\"passages\"", f"write one {SHAPE} per line")
        if not item["passages"]:
            raise KalbertError(f"{path} line {no} has no passages", "give each query one or more passages")
        try:
            check_passages(item["query"], item["passages"])
        except KalbertError as exc:
            raise KalbertError(f"{path} line {no}: {exc.message}", exc.hint) from None
        requests.append(item)
    if not requests:
        raise KalbertError(f"{path} holds no requests", f"write one {SHAPE} per line")
    return requests


def score_requests(reranker: Reranker, requests: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Each request with its passages' scores and their ranking, in file order."""
    for item in requests:
        scores = reranker.score(item["query"], item["passages"])
        ranking = np.argsort(-scores.astype(np.float64), kind="stable")
        yield {**item, "scores": [round(float(s), 6) for s in scores], "ranking": ranking.tolist()}
