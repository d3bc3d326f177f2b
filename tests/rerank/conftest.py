"""Reranker fixtures: a tiny data root (a KorQuAD file of ten two-paragraph articles and a Korean question -> answer
set), a tiny random ALBERT QA model to start from, and a reranker trained from it for two steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kalbert.data import get_spec

TOPICS = ["서울", "부산", "대구", "인천", "광주", "대전", "울산", "수원", "창원", "고양"]
SUBJECTS = ["감기", "두통", "허리 통증", "불면증", "위염", "비염", "빈혈", "무릎 통증", "피부염", "장염", "근육통",
            "치통", "천식", "결막염", "변비", "어지럼증", "목 통증", "손목 통증", "알레르기", "탈모"]


def _korquad(root: Path) -> None:
    articles = [{"title": topic, "paragraphs": [
        {"context": f"{topic}은 한국의 도시이다. 인구가 많다.",
         "qas": [{"id": f"{i}a", "question": f"{topic}은 어느 나라의 도시인가?",
                  "answers": [{"text": "한국", "answer_start": len(topic) + 2}]}]},
        {"context": f"{topic}에는 오래된 시장이 있다.",
         "qas": [{"id": f"{i}b", "question": f"{topic}에 무엇이 있나?",
                  "answers": [{"text": "시장", "answer_start": len(topic) + 8}]}]}]}
        for i, topic in enumerate(TOPICS)]
    target = root / get_spec("korquad").splits["train"][0]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"version": "test", "data": articles}, ensure_ascii=False), encoding="utf-8")


def _answers(root: Path) -> None:
    """Forty questions, each with one answer; the first question has a second answer."""
    rows = [(f"{subject} 때문에 {kind} 어떻게 해야 하나요?", f"{subject}에는 {kind} 충분히 쉬고 물을 많이 드세요.")
            for subject in SUBJECTS for kind in ("요즘", "밤마다")]
    rows.append((rows[0][0], f"{SUBJECTS[0]}이 오래가면 병원에 가 보세요."))
    files = get_spec("answers-ko").splits["train"]
    for i, rel in enumerate(files):
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        part = rows[i::len(files)]
        target.write_text("question\tanswer\n" + "".join(f"{q}\t{a}\n" for q, a in part), encoding="utf-8")


@pytest.fixture(scope="session")
def rerank_data_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rerank-data")
    _korquad(root)
    _answers(root)
    return root


@pytest.fixture
def rerank_data(rerank_data_root, monkeypatch) -> Path:
    """Point the data registry at the tiny reranker data for one test."""
    monkeypatch.setenv("KALBERT_DATA", str(rerank_data_root))
    return rerank_data_root


@pytest.fixture(scope="session")
def tiny_qa_albert(tmp_path_factory, ko_vocab, make_tiny_albert) -> Path:
    """A random AlbertForQuestionAnswering (hidden 32, 2 layers, 128 positions) with a QA model's record."""
    folder = make_tiny_albert(tmp_path_factory.mktemp("qa-albert") / "qa", ko_vocab,
                              head="AlbertForQuestionAnswering", seed=3)
    (folder / "kalbert.json").write_text(json.dumps({"kind": "qa", "languages": ["ko"]}), encoding="utf-8")
    return folder


def _rerank_config(out: Path, model: Path, **settings):
    from kalbert.rerank.config import RerankTrainConfig
    from kalbert.training.config import LoopConfig

    loop = LoopConfig(epochs=1.0, batch_size=4, lr=1e-3, max_steps=settings.pop("max_steps", 2), eval_steps=0)
    values = {"train": ["korquad:train", "answers-ko:train"], "eval": ["korquad:val", "answers-ko:dev"],
              "negatives": 3, "depth": 5, "max_seq_length": 48, "max_eval_rows": None, **settings}
    return RerankTrainConfig(model=str(model), out=str(out), loop=loop, **values)


@pytest.fixture(scope="session")
def rerank_config():
    """``rerank_config(out, model, **settings)``: a two-step training config on the tiny data."""
    return _rerank_config


@pytest.fixture(scope="session")
def tiny_reranker(tmp_path_factory, rerank_data_root, tiny_qa_albert) -> Path:
    """A reranker trained from ``tiny_qa_albert`` for two steps on the tiny data (tests only read it)."""
    from kalbert.rerank.train import train_reranker

    out = tmp_path_factory.mktemp("reranker") / "tiny"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KALBERT_DATA", str(rerank_data_root))
        train_reranker(_rerank_config(out, tiny_qa_albert))
    return out


@pytest.fixture
def sentence_model_folder(tmp_path) -> Path:
    """A folder that says it is a sentence model (no weights: the checks that refuse it read only its record)."""
    folder = tmp_path / "sentence-model"
    folder.mkdir()
    (folder / "modules.json").write_text("[]", encoding="utf-8")
    (folder / "kalbert.json").write_text(json.dumps({"kind": "sentence-model", "languages": ["ko"]}), encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def tiny_dense(tmp_path_factory, ko_vocab, make_tiny_albert) -> Path:
    """A tiny random sentence model: a dense miner and first stage whose ranking is arbitrary but real."""
    from kalbert.sentence.export import ExportConfig, export_sentence_model

    folder = tmp_path_factory.mktemp("dense")
    checkpoint = make_tiny_albert(folder / "ckpt", ko_vocab, head="AlbertModel", max_positions=64, seed=4,
                                  languages=["ko"])
    return export_sentence_model(ExportConfig(model=str(checkpoint), out=str(folder / "st"), max_seq_length=48,
                                              normalize=True))
