"""Search over documents: passages encoded by a sentence model into an engine (exact, HNSW, IVF-PQ or
Milvus), optionally beside BM25, queried dense, lexical or fused.

    from kalbert.search import SearchBuildConfig, build_index, open_index
    build_index(SearchBuildConfig(corpus=["docs/"], out="outputs/docs-index"))
    for hit in open_index("outputs/docs-index").query("검색어", k=5).hits[0]:
        print(hit.score, hit.document, hit.start, hit.end, hit.passage)

Names are imported on first use, so ``import kalbert.search`` pulls in neither torch nor faiss.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "SearchBuildConfig": "build", "build_index": "build", "work_folder": "build",
    "Index": "index", "Hit": "index", "QueryResult": "index", "open_index": "index", "search_index": "index",
    "Document": "documents", "read_documents": "documents", "EngineSettings": "engines",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'kalbert.search' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kalbert.search.{_WHERE[name]}"), name)
