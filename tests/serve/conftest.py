"""Fixtures of the serve tests: a small index (the shipped static model, BM25 beside it) and a loaded service
served by uvicorn on a free loopback port."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from serve_helpers import DOCS, serving_in_thread

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.fixture(scope="session")
def static_model() -> Path:
    return MODELS / "static-ko-zh-48k"


@pytest.fixture(scope="session")
def built_index(tmp_path_factory, static_model) -> Path:
    from kalbert.search import SearchBuildConfig, build_index

    folder = tmp_path_factory.mktemp("serve-index")
    corpus = folder / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    return build_index(SearchBuildConfig(corpus=[str(corpus)], out=str(folder / "docs"), model=str(static_model),
                                         passage_tokens=40, stride=8, lexical="bm25"))


@pytest.fixture
def index_copy(built_index, tmp_path) -> Path:
    return shutil.copytree(built_index, tmp_path / "docs")


@pytest.fixture(scope="module")
def service(built_index, tmp_path_factory):
    """A loaded service over a copy of the index (module scope: tests that write use ids of their own)."""
    from kalbert.serve.service import Service
    from kalbert.serve.settings import ServeSettings

    folder = shutil.copytree(built_index, tmp_path_factory.mktemp("served") / "docs")
    return Service.load(ServeSettings(index=[str(folder)], rerank_model="none", max_inputs=8, max_text_chars=200,
                                      max_documents=4, max_k=50, max_request_bytes=20_000))


@pytest.fixture(scope="module")
def url(service) -> Iterator[str]:
    with serving_in_thread(service) as address:
        yield address


