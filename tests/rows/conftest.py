"""Rows fixtures: question -> answer files in the tiny QA data root, and a tiny random sentence model to mine and
score with (the tiny data roots themselves are in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kalbert.data import get_spec

ANSWER_ROWS = [(f"질문 {i}번은 무엇을 묻는가?", f"{i}번 질문에는 이렇게 답한다: 답 {i}.") for i in range(40)]
"""(question, answer) rows of the tiny answers-ko files: 40 questions, so every carve holds some"""


@pytest.fixture
def tiny_answers(tiny_qa_data) -> list[tuple[str, str]]:
    """The tiny QA data root plus answers-ko files holding :data:`ANSWER_ROWS` (dealt over its files); returns them."""
    files = get_spec("answers-ko").splits["train"]
    for i, rel in enumerate(files):
        target = tiny_qa_data / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        rows = ANSWER_ROWS[i:: len(files)]
        target.write_text("question\tanswer\n" + "".join(f"{q}\t{a}\n" for q, a in rows), encoding="utf-8")
    return ANSWER_ROWS


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory, ko_vocab, make_tiny_albert) -> Path:
    """A random sentence model (hidden 32, 2 layers) on the Korean test vocabulary, as a miner or score teacher."""
    from kalbert.sentence.export import ExportConfig, export_sentence_model

    folder = tmp_path_factory.mktemp("rows-encoder")
    checkpoint = make_tiny_albert(folder / "ckpt", ko_vocab, head="AlbertModel", max_positions=64, seed=3,
                                  languages=["ko"])
    return export_sentence_model(ExportConfig(model=str(checkpoint), out=str(folder / "st"), max_seq_length=48))
