"""Static-model fixtures: tiny random sentence models as teachers (one reads the Korean test vocabulary,
one only the Chinese one) and a 16-d static model distilled from the first."""

from __future__ import annotations

from pathlib import Path

import pytest

from kalbert.data import data_path
from kalbert.errors import KalbertError


def _teacher(folder: Path, vocab: Path, make_tiny_albert) -> Path:
    from kalbert.sentence.export import ExportConfig, export_sentence_model

    checkpoint = make_tiny_albert(folder / "ckpt", vocab, head="AlbertModel", hidden=32, max_positions=64, seed=3,
                                  languages=["multilingual"])
    return export_sentence_model(ExportConfig(model=str(checkpoint), out=str(folder / "st"), normalize=True))


@pytest.fixture(scope="session")
def teacher(tmp_path_factory, ko_vocab, make_tiny_albert) -> Path:
    """A 32-wide random sentence model whose tokenizer is the Korean test vocabulary's."""
    return _teacher(tmp_path_factory.mktemp("static-teacher"), ko_vocab, make_tiny_albert)


@pytest.fixture(scope="session")
def zh_teacher(tmp_path_factory, zh_vocab, make_tiny_albert) -> Path:
    """A sentence model that reads only Chinese: Korean pieces are unknown to its tokenizer."""
    return _teacher(tmp_path_factory.mktemp("static-zh-teacher"), zh_vocab, make_tiny_albert)


@pytest.fixture(scope="session")
def korsts() -> None:
    """KorSTS from ../shared/data (the default dev split of Korean models); skip without it."""
    try:
        data_path("korsts", "dev")
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")


@pytest.fixture(scope="session")
def static_init(tmp_path_factory, teacher, ko_vocab, korsts) -> Path:
    """A 16-d static model distilled from ``teacher`` on the Korean test vocabulary."""
    from kalbert.static.distill import StaticDistillConfig, distill_static

    out = tmp_path_factory.mktemp("static") / "init"
    return distill_static(StaticDistillConfig(vocab=str(ko_vocab), out=str(out), teacher=str(teacher), dim=16))
