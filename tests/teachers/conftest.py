"""A tiny SentenceTransformer teacher folder (random ALBERT on the session's Korean vocab, normalised vectors)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def st_teacher(tmp_path_factory, ko_vocab, make_tiny_albert) -> Path:
    """A 32-wide random Korean sentence model, used as a teacher (exported once per session)."""
    from kalbert.sentence.export import ExportConfig, export_sentence_model

    folder = tmp_path_factory.mktemp("st-teacher")
    checkpoint = make_tiny_albert(folder / "ckpt", ko_vocab, head="AlbertModel", max_positions=64, seed=3,
                                  languages=["ko"])
    return export_sentence_model(ExportConfig(model=str(checkpoint), out=str(folder / "st"), normalize=True))
