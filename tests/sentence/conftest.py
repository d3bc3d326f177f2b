"""Sentence-model fixtures: a tiny random ALBERT on the session's Korean vocab, its exported
sentence model, a narrower "teacher", and a tiny data root (cut from ../shared/data) that tests
point KALBERT_DATA at so that training and evaluation take seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kalbert.data import data_path
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
