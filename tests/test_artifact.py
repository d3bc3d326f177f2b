"""The artifact contract (kalbert.json, kinds, languages) and the shared training components."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kalbert.artifact import META_FILE, Kind, folder_language, invocation, read_meta, write_meta
from kalbert.errors import KalbertError


def test_read_meta_checks_the_kind_only_when_asked(tmp_path):
    assert read_meta(tmp_path) == {}
    with pytest.raises(KalbertError, match="is not a pretraining data folder"):
        read_meta(tmp_path, expect=Kind.PRETRAINING_DATA)
    write_meta(tmp_path, {"kind": Kind.VOCAB, "languages": ["ko", "zh"]})
    assert json.loads((tmp_path / META_FILE).read_text(encoding="utf-8"))["kind"] == "vocab"
    assert read_meta(tmp_path, expect=(Kind.VOCAB, Kind.PRETRAINED_MODEL))["languages"] == ["ko", "zh"]
    with pytest.raises(KalbertError, match="is a vocab folder, not a sentence model folder"):
        read_meta(tmp_path, expect=Kind.SENTENCE_MODEL)


def test_one_language_reader_that_never_guesses(tmp_path):
    with pytest.raises(KalbertError, match="declares no languages"):
        folder_language(tmp_path)
    write_meta(tmp_path, {"kind": Kind.VOCAB, "languages": ["ko", "zh"]})
    assert folder_language(tmp_path) == "ko+zh"


def test_best_checkpoint_keeps_the_best_weights():
    import torch

    from kalbert.training import BestCheckpoint, adamw, decay_split

    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    decayed, plain = decay_split(model.parameters())
    assert [p.ndim for p in decayed] == [2] and all(p.ndim == 1 for p in plain) and len(plain) == 3
    assert [g["weight_decay"] for g in adamw(model.parameters(), 1e-3, 0.01).param_groups] == [0.01, 0.0]
    best = BestCheckpoint()
    assert not best.restore(model)
    assert best.offer(0.5, 1, model)
    kept = model[0].weight.detach().clone()
    with torch.no_grad():
        model[0].weight.add_(1.0)
    assert not best.offer(0.4, 2, model) and not best.offer(0.5, 3, model)
    assert best.restore(model) and torch.equal(model[0].weight, kept) and (best.score, best.at) == (0.5, 1)


@pytest.mark.parametrize(("argv", "expected"), [
    (["/usr/local/bin/kalbert", "vocab", "build"], "kalbert vocab build"),
    (["{package}/__main__.py", "demo"], "kalbert demo"),
    (["{package}/cli/main.py", "search", "query"], "kalbert search query"),
    # pytest run from a checkout that is itself called kalbert is not the kalbert program
    (["/work/kalbert/.venv/lib/python3.11/site-packages/pytest/__main__.py", "-q"], None),
    (["/work/kalbert/tests/main.py"], None),
])
def test_invocation_is_the_kalbert_program_only(monkeypatch, argv, expected):
    import kalbert

    package = str(Path(kalbert.__file__).resolve().parent)
    monkeypatch.setattr(sys, "argv", [argv[0].format(package=package), *argv[1:]])
    assert invocation() == expected
