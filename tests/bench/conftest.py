"""Retrieval fixtures: tiny SQuAD-format files at the registry's paths under a temp data root, and a
hand-built static sentence model with query/document prompts, so every ranking can be worked out by hand."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from kalbert.data import article_parts, get_spec

TITLES = [f"문서{i}" for i in range(10)]
EXTRA = "빈 문단 extra 입니다."
"""a paragraph no question asks about: the corpus holds it all the same"""
NO_MATCH = "zzz?"
"""a test question sharing no token with any paragraph: BM25 scores every paragraph 0"""


def context(title: str) -> str:
    return f"{title} 설명 w{TITLES.index(title)} 입니다."


def _article(title: str, extra: list[str], questions: list[str]) -> dict:
    qas = [{"id": f"{title}-{q}", "question": q, "answers": [{"text": "설명", "answer_start": len(title) + 1}]}
           for q in questions]
    return {"title": title, "paragraphs": [{"context": context(title), "qas": qas},
                                           *({"context": text, "qas": []} for text in extra)]}


def ordered_titles() -> dict[str, list[str]]:
    """The carve's titles by part, and the file order: a train article (with the extra paragraph) first, then the
    first test article, so that article's paragraph sits at corpus index 2."""
    parts = article_parts(TITLES)
    by_part = {part: [t for t in TITLES if parts[t] == part] for part in ("train", "val", "test")}
    first, test = by_part["train"][0], by_part["test"][0]
    order = [first, test] + [t for t in TITLES if t not in (first, test)]
    return {**by_part, "order": order}


def squad_file(titles: list[str], first_test: str | None, transform=lambda text: text) -> dict:
    """One SQuAD file: each article's paragraph with the question ``w<i> 는 무엇?``; ``first_test`` also gets
    :data:`NO_MATCH`; the first article holds :data:`EXTRA` too."""
    articles = []
    for i, title in enumerate(titles):
        questions = [f"w{TITLES.index(title)} 는 무엇?"] + ([NO_MATCH] if title == first_test else [])
        articles.append(_article(title, [EXTRA] if i == 0 else [], questions))
    return json.loads(transform(json.dumps({"version": "test", "data": articles}, ensure_ascii=False)))


@dataclass(frozen=True)
class TinyQA:
    """Where the tiny QA files are and what they hold, for tests to work rankings out by hand."""

    root: Path
    titles: dict[str, list[str]]
    extra: str = EXTRA
    no_match: str = NO_MATCH

    @staticmethod
    def context(title: str) -> str:
        return context(title)


@pytest.fixture
def qa_root(tmp_path, monkeypatch) -> TinyQA:
    """KorQuAD, CMRC 2018 and DRCD as tiny files under a temp data root (nothing else is found)."""
    from kalbert.data import roots

    root = tmp_path / "data"
    titles = ordered_titles()
    korquad = squad_file(titles["order"], titles["test"][0])
    # CMRC 2018's trial file repeats a dev paragraph: the corpus holds it once
    repeat = {"context": context(TITLES[0]), "qas": []}
    trial = {"version": "trial", "data": [{"title": "trial", "paragraphs": [repeat]}]}
    # DRCD: the same articles with the Traditional "說明" (Simplified "说明") in every paragraph
    drcd = squad_file(titles["order"], titles["test"][0], transform=lambda text: text.replace("설명", "說明"))
    files = {get_spec("korquad").splits["dev"][0]: korquad,
             get_spec("cmrc2018").splits["dev"][0]: korquad, get_spec("cmrc2018").splits["trial"][0]: trial,
             **{rel: drcd for rel in get_spec("drcd").splits["all"]}}
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setenv("KALBERT_DATA", str(root))
    monkeypatch.setattr(roots, "_BESIDE_CHECKOUT", tmp_path / "none")
    monkeypatch.chdir(tmp_path)
    return TinyQA(root, titles)


@pytest.fixture
def prompted_static(tmp_path) -> Path:
    """A static sentence model over a whitespace word vocabulary, one dimension per word ``w0``..``w9`` and one
    per prompt word, with prompts ``query`` "qq " and ``document`` "dd " (kalbert.json: languages ko)."""
    import numpy as np
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["[UNK]", "qq", "dd", *(f"w{i}" for i in range(10))]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    weights = np.eye(len(words), dtype=np.float32)
    weights[0] = 0.0  # unknown words add nothing
    model = SentenceTransformer(modules=[StaticEmbedding(tokenizer, embedding_weights=weights)], device="cpu",
                                prompts={"query": "qq ", "document": "dd "})
    folder = tmp_path / "prompted-static"
    model.save(str(folder), create_model_card=False)
    (folder / "kalbert.json").write_text(json.dumps({"languages": ["ko"]}), encoding="utf-8")
    return folder
