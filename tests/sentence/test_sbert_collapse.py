"""The collapse guard: constant embeddings are flagged, healthy ones are not, and training that
never leaves collapse writes nothing and says what to change."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kalbert.errors import KalbertError
from kalbert.sentence.collapse import check_collapse
from kalbert.sentence.config import SentenceTrainConfig
from kalbert.sentence.train import train_sentence_model
from kalbert.training import LoopConfig


def test_constant_embeddings_are_collapsed():
    report = check_collapse(np.tile(np.arange(16, dtype=np.float32), (50, 1)))
    assert report.collapsed and report.relative_std < 1e-6 and "COLLAPSED" in report.describe()


def test_near_constant_similarity_is_collapsed():
    rng = np.random.default_rng(0)
    base = rng.normal(size=64)
    report = check_collapse(base + 1e-5 * rng.normal(size=(100, 64)))
    assert report.collapsed and report.mean_cosine > 0.999


def test_spread_embeddings_are_healthy():
    report = check_collapse(np.random.default_rng(0).normal(size=(100, 64)))
    assert not report.collapsed and abs(report.mean_cosine) < 0.1


def test_collapsed_training_stops_and_writes_nothing(tiny_sbert, tiny_data, tmp_path, monkeypatch):
    from kalbert.sentence.encoder import load_sentence_model as real_load

    def load_collapsed(path, **kwargs):
        model = real_load(path, **kwargs)
        with torch.no_grad():
            for name, param in model.named_parameters():
                if "full_layer_layer_norm.weight" in name:
                    param.zero_()  # every token -> the LayerNorm bias: one vector for every sentence
        return model

    monkeypatch.setattr("kalbert.sentence.train.load_sentence_model", load_collapsed)
    config = SentenceTrainConfig(model=str(tiny_sbert), out=str(tmp_path / "out"), train=["korsts"],
                       loop=LoopConfig(lr=0.0, max_steps=2, eval_steps=1, batch_size=16))
    with pytest.raises(KalbertError, match="collapsed.*learning rate"):
        train_sentence_model(config)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()  # a rerun starts afresh
