"""Export contract: a kalbert sentence folder loads with plain SentenceTransformer, offline, in a fresh
process, and gives kalbert's embeddings; bad checkpoints fail with one clear line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.sentence import encode, load_sentence_model
from kalbert.sentence.export import ExportConfig, check_checkpoint, export_sentence_model

SENTENCES = ["배우들의 연기도 좋았다.", "한 남자가 기타를 치고 있다.", "배우들의 연기도 좋았다.",
             "비행기가 이륙하고 있다."]

FRESH = """
import sys, numpy as np
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(sys.argv[1])
np.save(sys.argv[2], model.encode(sys.argv[3:], convert_to_numpy=True))
"""


def test_fresh_offline_sentence_transformer_matches_kalbert_encode(tiny_sbert, tmp_path):
    ours = encode(load_sentence_model(tiny_sbert), SENTENCES, batch_size=2)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": ""}
    subprocess.run([sys.executable, "-c", FRESH, str(tiny_sbert), str(tmp_path / "theirs.npy"), *SENTENCES],
                   check=True, env=env, cwd=tmp_path, capture_output=True)
    theirs = np.load(tmp_path / "theirs.npy")
    assert ours.shape == (len(SENTENCES), 32) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    np.testing.assert_array_equal(ours[0], ours[2])  # duplicates encoded once


def test_export_folder_carries_card_metrics_and_tokenizer(tiny_albert, tiny_data, tmp_path):
    out = export_sentence_model(ExportConfig(model=str(tiny_albert), out=str(tmp_path / "st"), eval=["korsts:dev"],
                                             normalize=True, dense_dim=8))
    names = {p.name for p in out.iterdir()}
    assert {"modules.json", "spiece.model", "tokenizer_config.json", "kalbert.json", "README.md"} <= names
    meta = json.loads((out / "kalbert.json").read_text())
    assert meta["languages"] == ["ko"] and meta["metrics"][0]["data"] == "korsts:dev"
    card = (out / "README.md").read_text()
    assert "korsts:dev" in card and "- ko" in card
    vectors = encode(load_sentence_model(out), SENTENCES)
    assert vectors.shape == (4, 8)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_plain_checkpoint_loads_with_mean_pooling(tiny_albert, tiny_sbert):
    np.testing.assert_allclose(encode(load_sentence_model(tiny_albert), SENTENCES),
                               encode(load_sentence_model(tiny_sbert), SENTENCES), atol=1e-5)


def test_checkpoint_without_tokenizer_is_a_clear_error(tiny_albert, ko_vocab, tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copyfile(tiny_albert / name, bare / name)
    with pytest.raises(KalbertError, match="has no tokenizer.*--tokenizer"):
        check_checkpoint(bare)
    assert check_checkpoint(bare, ko_vocab) == (bare, ko_vocab)
    code = main(["sbert", "export", "--model", str(bare), "--out", str(tmp_path / "out")])
    assert code == 2 and not (tmp_path / "out").exists()


def test_missing_or_non_albert_checkpoint(tmp_path):
    with pytest.raises(KalbertError, match="does not exist"):
        check_checkpoint(tmp_path / "nope")
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(KalbertError, match="not ALBERT"):
        check_checkpoint(tmp_path)


def test_folder_languages_from_meta_or_card(tmp_path):
    from kalbert.artifact import folder_languages
    from kalbert.teachers.backends import load_teacher

    minilm = load_teacher("all-MiniLM-L6-v2")
    assert folder_languages(minilm.path) == ["en"] and minilm.languages == ["en"]
    (tmp_path / "kalbert.json").write_text('{"language": "ko+zh"}')
    assert folder_languages(tmp_path) == ["ko", "zh"]
    (tmp_path / "kalbert.json").unlink()
    (tmp_path / "README.md").write_text("---\nlanguage:\n- ko\n- zh\ntags:\n- x\n---\n# card\n")
    assert folder_languages(tmp_path) == ["ko", "zh"]


def test_half_weights_copy_is_smaller_and_encodes_the_same(tiny_sbert, tmp_path):
    import torch
    from sentence_transformers import SentenceTransformer

    out = tmp_path / "half"
    assert main(["sbert", "export", "--model", str(tiny_sbert), "--out", str(out), "--weights", "float16"]) == 0
    size = sum(f.stat().st_size for f in out.rglob("*.safetensors"))
    assert size < 0.6 * sum(f.stat().st_size for f in tiny_sbert.rglob("*.safetensors"))
    half, full = SentenceTransformer(str(out)), SentenceTransformer(str(tiny_sbert))
    assert next(half.parameters()).dtype == torch.float32
    sentences = ["배우들의 연기도 좋았다.", "영화가 정말 재미있었다."]
    np.testing.assert_allclose(half.encode(sentences), full.encode(sentences), atol=2e-3)
    assert json.loads((out / "kalbert.json").read_text())["weights_storage"]["dtype"] == "float16"
    assert main(["sbert", "export", "--model", str(tmp_path / "nope"), "--out", str(tmp_path / "x"),
                 "--weights", "float16"]) == 2


def test_half_weights_copy_reads_the_token_limit_it_is_given(tiny_sbert, tmp_path):
    from sentence_transformers import SentenceTransformer

    source, out = tmp_path / "source", tmp_path / "half-24"
    shutil.copytree(tiny_sbert, source)
    fast = json.loads((source / "tokenizer.json").read_text())  # as a tokenizer saved after a truncating call is
    fast["truncation"] = {"direction": "Right", "max_length": 16, "strategy": "LongestFirst", "stride": 0}
    (source / "tokenizer.json").write_text(json.dumps(fast))
    assert SentenceTransformer(str(source)).max_seq_length != 24
    assert main(["sbert", "export", "--model", str(source), "--out", str(out), "--weights", "float16",
                 "--max-seq-length", "24"]) == 0
    assert SentenceTransformer(str(out)).max_seq_length == 24
    assert json.loads((out / "tokenizer.json").read_text())["truncation"]["max_length"] == 24
    meta = json.loads((out / "kalbert.json").read_text())
    assert meta["stages"][-1]["config"]["max_seq_length"] == 24
    assert "max sequence length 24 tokens" in (out / "README.md").read_text()
