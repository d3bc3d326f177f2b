"""`kalbert static distill`: every piece through the teacher, PCA, frequency weights; the folder loads with
plain sentence-transformers (and model2vec) and encodes the weighted mean of its pieces' vectors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.static.distill import StaticDistillConfig, distill_static
from kalbert.static.weighting import piece_weights
from kalbert.vocab.files import load_model_proto

SENTENCE = "배우들의 연기가 정말 좋았다"


def _load(folder, **kwargs):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu", local_files_only=True, **kwargs)


def test_folder_encodes_the_weighted_mean_of_piece_vectors(static_init, teacher, ko_vocab):
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    got = _load(static_init).encode([SENTENCE])[0]
    encoding = Tokenizer.from_file(str(ko_vocab / "tokenizer.json")).encode(SENTENCE, add_special_tokens=False)
    proto = load_model_proto(ko_vocab)
    total = sum(math.exp(p.score) for p in proto.pieces if p.type == p.NORMAL)
    extras = load_file(str(static_init / "kalbert_static.safetensors"))
    teacher_model = _load(teacher)
    rows = []
    for piece_id, piece in zip(encoding.ids, encoding.tokens, strict=True):
        text = piece.replace("\u2581", "")
        if not text:  # the bare word-start piece
            rows.append(np.zeros(16))
            continue
        vector = teacher_model.encode([text], prompt="")[0]
        projected = (vector - extras["projection_mean"]) @ extras["projection"].T
        rows.append(projected * 1e-4 / (1e-4 + math.exp(proto.pieces[piece_id].score) / total))
    np.testing.assert_allclose(got, np.mean(rows, axis=0), rtol=1e-3, atol=1e-5)
    axes = extras["projection"]
    np.testing.assert_allclose(axes @ axes.T, np.eye(16), atol=1e-5)  # orthonormal PCA axes


def test_folder_records_itself_and_loads_in_model2vec(static_init):
    meta = json.loads((static_init / "kalbert.json").read_text())
    assert meta["kind"] == "static-model" and meta["languages"] == ["ko"] and meta["dimension"] == 16
    assert [s["stage"] for s in meta["stages"]] == ["distill"]
    assert [m["data"] for m in meta["metrics"]] == ["korsts:dev"]  # the Korean default dev split
    card = (static_init / "README.md").read_text()
    assert "16-dimensional static embedding model" in card and "- ko" in card
    model2vec = pytest.importorskip("model2vec")
    static = model2vec.StaticModel.from_pretrained(str(static_init))
    np.testing.assert_allclose(static.encode([SENTENCE])[0], _load(static_init).encode([SENTENCE])[0], atol=1e-6)


def test_weights_discount_frequent_pieces(ko_vocab):
    sif, zipf, none = (piece_weights(ko_vocab, scheme, 1e-3) for scheme in ("sif", "zipf", "none"))
    word_start = 5  # "▁", the most frequent piece of every kalbert vocabulary
    assert sif[word_start] < 0.05 and sif[-1] > 0.5 and np.all(none == 1.0)
    assert np.all(sif[:5] == 1.0)  # special pieces have p = 0 (their vectors are zero anyway)
    assert zipf[word_start] < zipf[-1] and sif.dtype == np.float32


def test_teacher_that_cannot_read_the_pieces_is_refused(zh_teacher, ko_vocab, tmp_path):
    config = StaticDistillConfig(vocab=str(ko_vocab), out=str(tmp_path / "out"), teacher=str(zh_teacher), dim=8)
    with pytest.raises(KalbertError, match=r"reads \d+ of \d+ vocabulary pieces as unknown \(e\.g\. '"):
        distill_static(config)
    assert not (tmp_path / "out").exists()


def test_bad_input_is_one_line_and_writes_nothing(teacher, ko_vocab, tmp_path, capsys):
    out = tmp_path / "out"
    base = ["static", "distill", "--vocab", str(ko_vocab), "--out", str(out), "--dim", "8"]
    assert main([*base, "--teacher", str(tmp_path / "no-such-teacher")]) == 2
    assert "teacher folder" in capsys.readouterr().err
    assert main([*base, "--teacher", str(teacher), "--dim", "64"]) == 2
    assert "wider than" in capsys.readouterr().err
    assert main([*base, "--teacher", str(teacher), "--vocab", str(tmp_path)]) == 2
    assert "--vocab takes a vocab folder" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".out.*"))
    out.mkdir()
    assert main([*base, "--teacher", str(teacher)]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and err.count("\n") == 1 and not any(out.iterdir())
