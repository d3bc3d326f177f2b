"""Search tests index with the shipped static model (fast to load and to encode, real tokenizer)."""

from __future__ import annotations

from pathlib import Path

import pytest

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.fixture(scope="session")
def static_model() -> Path:
    return MODELS / "static-ko-zh-48k"


@pytest.fixture(scope="session")
def sbert_model() -> Path:
    return MODELS / "sbert-ko-zh-small"


@pytest.fixture(scope="session")
def qa_model() -> Path:
    return MODELS / "qa-ko-zh-small"
