"""Search moved to :mod:`kalbert.search` (documents, passages, engines); these names stay importable from
``kalbert.sentence`` for the callers written when indexes held sentences."""

from kalbert.search.build import SearchBuildConfig, build_index
from kalbert.search.index import Index as SearchIndex
from kalbert.search.index import search_index

__all__ = ["SearchBuildConfig", "SearchIndex", "build_index", "search_index"]
