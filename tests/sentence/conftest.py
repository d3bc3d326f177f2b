"""Sentence-model fixtures: a tiny random ALBERT on the session's Korean vocab, its exported
sentence model, a narrower "teacher", and a tiny data root (cut from ../shared/data) that tests
point KALBERT_DATA at so that training and evaluation take seconds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kalbert.data import data_path, get_spec
from kalbert.errors import KalbertError

TINY_FILES = {  # registry file -> lines kept (header included)
    ("korsts", "train"): 97,
    ("korsts", "dev"): 49,
    ("korsts", "test"): 49,
    ("kornli", "dev"): 61,
    ("afqmc", "train"): 60,
    ("tatoeba-en-ko", None): 301,
    ("parallel-xnli-test", None): 21,
}


@pytest.fixture(scope="session")
def tiny_albert(tmp_path_factory, ko_vocab, make_tiny_albert) -> Path:
    """A random ALBERT checkpoint (hidden 32, 2 layers) with the Korean test vocab's tokenizer."""
    return make_tiny_albert(tmp_path_factory.mktemp("albert") / "tiny", ko_vocab, head="AlbertModel",
                            max_positions=64, seed=1, languages=["ko"])


@pytest.fixture(scope="session")
def tiny_sbert(tmp_path_factory, tiny_albert) -> Path:
    """``tiny_albert`` exported as a SentenceTransformer folder (mean pooling, 48 tokens)."""
    from kalbert.sentence.export import ExportConfig, export_sentence_model

    out = tmp_path_factory.mktemp("sbert") / "tiny"
    return export_sentence_model(ExportConfig(model=str(tiny_albert), out=str(out), max_seq_length=48))


@pytest.fixture(scope="session")
def tiny_teacher(tmp_path_factory, ko_vocab, make_tiny_albert) -> Path:
    """A 24-wide random "English" sentence model, so distillation needs a projection."""
    from kalbert.sentence.export import ExportConfig, export_sentence_model

    folder = tmp_path_factory.mktemp("teacher")
    checkpoint = make_tiny_albert(folder / "ckpt", ko_vocab, head="AlbertModel", hidden=24, max_positions=64, seed=2,
                                  languages=["en"])
    return export_sentence_model(ExportConfig(model=str(checkpoint), out=str(folder / "st"), normalize=True))


@pytest.fixture(scope="session")
def tiny_data_root(tmp_path_factory) -> Path:
    """The first rows of a few registry files, at their registry paths under a temp data root."""
    from kalbert.data import get_spec

    root = tmp_path_factory.mktemp("data")
    for (name, split), lines in TINY_FILES.items():
        try:
            (source,) = data_path(name, split)
        except KalbertError as exc:
            pytest.skip(f"shared data missing: {exc}")
        (rel,) = get_spec(name).splits[split or "all"]
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(source, encoding="utf-8") as handle:
            target.write_text("".join(line for _, line in zip(range(lines), handle, strict=False)), encoding="utf-8")
    return root


@pytest.fixture
def tiny_data(tiny_data_root, monkeypatch) -> Path:
    """Point the data registry at ``tiny_data_root`` for one test."""
    monkeypatch.setenv("KALBERT_DATA", str(tiny_data_root))
    return tiny_data_root


@pytest.fixture
def tiny_qa_data(tiny_data_root, tmp_path, monkeypatch):
    """The tiny data root plus a KorQuAD file of ten two-paragraph articles (the carve: 7 train, 1 val, 2 test)."""
    root = tmp_path / "data"
    shutil.copytree(tiny_data_root, root)
    topics = ["서울", "부산", "대구", "인천", "광주", "대전", "울산", "수원", "창원", "고양"]
    articles = [{"title": topic, "paragraphs": [
        {"context": f"{topic}은 한국의 도시이다. 인구가 많다.",
         "qas": [{"id": f"{i}a", "question": f"{topic}은 어느 나라의 도시인가?",
                  "answers": [{"text": "한국", "answer_start": len(topic) + 2}]}]},
        {"context": f"{topic}에는 오래된 시장이 있다.",
         "qas": [{"id": f"{i}b", "question": f"{topic}에 무엇이 있나?",
                  "answers": [{"text": "시장", "answer_start": len(topic) + 8}]}]}]}
        for i, topic in enumerate(topics)]
    target = root / get_spec("korquad").splits["train"][0]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"version": "test", "data": articles}, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setenv("KALBERT_DATA", str(root))
    return root
