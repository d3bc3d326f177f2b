"""Lexical retrieval: texts as morphemes and words, scored with BM25 (PyPI ``bm25s``).

Korean and Chinese write no spaces between the units a query and a passage share (particles glue onto
Korean nouns, Chinese has no spaces at all), so whitespace tokens match almost nothing. Each text is read
whole by the analyzer of its script: mecab-ko morphemes where it holds at least as many Hangul as Han
characters, else jieba words (HMM on), so mixed collections need no language flag. A whole text, not
word by word as :mod:`kalbert.text.segment` cuts for vocabularies: out of its sentence mecab reads
``한국의`` as ``한`` + ``국의``, in it as ``한국`` + ``의``. Tokens are lowercased and punctuation is dropped.

Ranking is exact and deterministic: every document's BM25 score is computed, and equal scores are
ordered by document index (lower first), so a result never depends on a partial sort.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from kalbert.errors import KalbertError
from kalbert.io import atomic_output_dir
from kalbert.ranking import top_k

log = logging.getLogger(__name__)
_WORD = re.compile(r"[^\W_]+")
"""runs of letters and digits: what is left of a token once punctuation and symbols are dropped"""
_HANGUL = re.compile("[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
META_FILE = "kalbert_lexical.json"
FORMAT = "kalbert-bm25/1"
BM25_PARAMS = {"method": "lucene", "k1": 1.5, "b": 0.75}
"""bm25s's defaults, named so that records say what scored"""
PACKAGES = ("python-mecab-ko", "python-mecab-ko-dic", "jieba")


@cache
def mecab_tagger() -> Any:
    """python-mecab-ko's tagger, loaded once, with a one-line error for a missing package or dictionary."""
    try:
        import mecab

        return mecab.MeCab()
    except ImportError as exc:
        raise KalbertError(f"mecab-ko is not available ({exc})", "pip install python-mecab-ko") from None
    except Exception as exc:  # the binding raises a bare RuntimeError for a missing dictionary
        raise KalbertError(f"mecab-ko could not load its dictionary ({exc})",
                           "pip install python-mecab-ko-dic") from None


@cache
def jieba_tokenizer() -> Any:
    """jieba's tokenizer, loaded once, quiet."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    return jieba.Tokenizer()


def lexical_tokens(text: str) -> list[str]:
    """``text`` as lowercased mecab-ko morphemes (mostly Hangul) or jieba words (mostly Han), punctuation dropped."""
    if len(_HANGUL.findall(text)) >= len(_HAN.findall(text)):
        pieces = mecab_tagger().morphs(text)
    else:
        pieces = jieba_tokenizer().lcut(text, HMM=True)
    return [token.lower() for piece in pieces for token in _WORD.findall(piece)]


def _tokenizer_record() -> dict[str, str]:
    """What decides the tokens, saved beside an index so that a reload reads queries the same way."""
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "missing"
    return {"format": FORMAT, "tokenizer": "kalbert.text.lexical.lexical_tokens", **versions}


def bm25_settings() -> dict[str, Any]:
    """What decides BM25's scores: the tokenizer and its packages, bm25s and its parameters (for records)."""
    return {**_tokenizer_record(), "bm25s": importlib.metadata.version("bm25s"), **BM25_PARAMS}


class BM25Index:
    """A BM25 index (bm25s, :data:`BM25_PARAMS`) over :func:`lexical_tokens`."""

    def __init__(self, model, size: int) -> None:
        self._model = model
        self.size = size
        """number of indexed texts"""

    @classmethod
    def build(cls, texts: list[str]) -> BM25Index:
        import bm25s

        model = bm25s.BM25(**BM25_PARAMS)
        if texts:
            model.index([lexical_tokens(text) for text in texts], show_progress=False)
        return cls(model, len(texts))

    def search(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best texts for each query (fewer columns if the index holds fewer): indices int64
        ``[n_queries, k]`` and BM25 scores float32, best first."""
        k = min(k, self.size)
        indices = np.zeros((len(queries), k), dtype=np.int64)
        scores = np.zeros((len(queries), k), dtype=np.float32)
        if not self.size:
            return indices, scores
        for i, query in enumerate(queries):  # one score row at a time: a large corpus never makes a huge matrix
            found, values = top_k(self._scores(lexical_tokens(query))[None, :], k)
            indices[i], scores[i] = found[0], values[0]
        return indices, scores

    def score_rows(self, queries: list[str]) -> np.ndarray:
        """Every indexed text's BM25 score for each query, float32 ``[n_queries, size]`` (for corpora whose
        whole score matrix fits in memory: what score fusion needs; :meth:`search` keeps one row at a time)."""
        rows = np.zeros((len(queries), self.size), dtype=np.float32)
        for i, query in enumerate(queries):
            if self.size:
                rows[i] = self._scores(lexical_tokens(query))
        return rows

    def document_frequencies(self, tokens: list[str]) -> np.ndarray:
        """How many indexed texts hold each token (0 for one never seen): what scoring texts added to a search
        index since this one was built needs, so that they rank beside the indexed ones."""
        if not self.size:
            return np.zeros(len(tokens), dtype=np.int64)
        indptr = self._model.scores["indptr"]
        ids = [self._model.vocab_dict.get(token) for token in tokens]
        return np.array([0 if i is None else int(indptr[i + 1] - indptr[i]) for i in ids], dtype=np.int64)

    def _scores(self, tokens: list[str]) -> np.ndarray:
        known = [token for token in tokens if token in self._model.vocab_dict]
        if not known:  # nothing in common with any text: every score is 0
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._model.get_scores(known), dtype=np.float32)

    def save(self, folder: Path) -> None:
        """Write the index to ``folder`` (replaced atomically) with the tokenizer it was built with."""
        with atomic_output_dir(folder, overwrite=True) as tmp:
            if self.size:
                self._model.save(str(tmp), show_progress=False)
            (tmp / META_FILE).write_text(json.dumps({**bm25_settings(), "size": self.size}, indent=2) + "\n",
                                         encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> BM25Index:
        import bm25s

        folder = Path(folder)
        meta_path = folder / META_FILE
        if not meta_path.is_file():
            raise KalbertError(f"{folder} holds no kalbert BM25 index (no {META_FILE})", "rebuild the index")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise KalbertError(f"the BM25 index in {folder} is in format {meta.get('format')!r}, not {FORMAT!r}",
                               "rebuild the index")
        current = _tokenizer_record()
        changed = sorted(key for key in current if meta.get(key) != current[key])
        if changed:  # queries may now be cut differently from the indexed texts: scores drift, nothing breaks
            log.warning("the BM25 index in %s was built with %s; queries are read with %s (rebuild it to match)",
                        folder, ", ".join(f"{key} {meta.get(key)}" for key in changed),
                        ", ".join(f"{key} {current[key]}" for key in changed))
        model = bm25s.BM25.load(str(folder), show_progress=False) if meta["size"] else bm25s.BM25(**BM25_PARAMS)
        return cls(model, int(meta["size"]))
