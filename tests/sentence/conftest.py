"""Sentence-model fixtures: a tiny random ALBERT on the session's Korean vocab, its exported sentence model and a
narrower "teacher" (the tiny data roots that training tests point KALBERT_DATA at are in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest


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


@pytest.fixture
def tasks_of():
    """``tasks_of(model, refs, max_rows=None, mini_batch_size=None, **rows)``: the training tasks ``refs`` become, as
    `sbert train` builds them from the rows layer (``rows``: RowsConfig settings)."""
    from kalbert.rows.build import training_rows
    from kalbert.rows.config import RowsConfig
    from kalbert.rows.references import ROW_KINDS, resolve_refs
    from kalbert.sentence.config import SentenceTrainConfig
    from kalbert.sentence.train import build_tasks

    def make(model, refs: list[str], max_rows: int | None = None, mini_batch_size: int | None = None, **rows):
        config = SentenceTrainConfig(model="m", out="o", train=refs, rows=RowsConfig(**rows), max_rows=max_rows,
                                     mini_batch_size=mini_batch_size)
        sets = training_rows(resolve_refs(refs, ROW_KINDS, "--train", []), config.rows, max_rows).sets
        return build_tasks(model, sets, config)

    return make
