"""Bad files a new user meets, each one line on stderr with exit code 2 and nothing written: an output folder
that cannot be made (``--out /proc/x``), a truncated ``model.safetensors`` in a copied model folder, a binary
file given as a recipe; and the advice for a missing ONNX file, which exports into a new folder rather than
rewriting the model's ``kalbert.json``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.io import atomic_output_dir
from kalbert.weights import check_weight_files

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
UNWRITABLE = Path("/proc/kalbert-out")
"""/proc refuses a new folder even to root, whose permission bits pass everything else"""


def _refused(argv: list[str], capsys, *expected: str) -> str:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kalbert: error:") and "Traceback" not in err, err
    assert all(text in err for text in expected), err
    return err


def _truncated_copy(model: Path, folder: Path, size: int) -> Path:
    shutil.copytree(model, folder)
    data = (model / "model.safetensors").read_bytes()[:size]
    (folder / "model.safetensors").write_bytes(data)
    return folder


@pytest.fixture
def no_model_load(monkeypatch):
    """Fail a test whose verb gets as far as building or loading a model."""
    from sentence_transformers import SentenceTransformer

    def loaded(*args, **kwargs):
        raise AssertionError("a model loaded before its input was refused")

    monkeypatch.setattr(SentenceTransformer, "__init__", loaded)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs Linux /proc")
def test_an_output_that_cannot_be_made_is_one_line(no_model_load, tmp_path, capsys):
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"id": "a", "text": "고양이가 잔다."}\n', encoding="utf-8")
    sbert = str(MODELS / "sbert-ko-zh-small")
    for argv in (["search", "build", "--corpus", str(corpus), "--model", str(MODELS / "static-ko-zh-48k")],
                 ["search", "build", "--corpus", str(corpus), "--shard", "0/2"],
                 ["sbert", "export", "--model", sbert], ["sbert", "export", "--model", sbert, "--weights", "float16"]):
        _refused([*argv, "--out", str(UNWRITABLE)], capsys, f"cannot write {UNWRITABLE}", "choose an --out")
    with pytest.raises(KalbertError, match="cannot write"), atomic_output_dir(UNWRITABLE / "sub"):
        pass


def test_a_truncated_weights_file_is_one_line(no_model_load, tmp_path, capsys):
    broken = _truncated_copy(MODELS / "sbert-ko-zh-small", tmp_path / "broken", 1000)
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"id": "a", "text": "고양이가 잔다."}\n', encoding="utf-8")
    damaged = f"weights file {broken / 'model.safetensors'} is damaged"
    _refused(["search", "build", "--corpus", str(corpus), "--model", str(broken), "--out", str(tmp_path / "i")],
             capsys, damaged, "cut short")
    for flags in ([], ["--weights", "float16"]):
        _refused(["sbert", "export", "--model", str(broken), "--out", str(tmp_path / "e"), *flags], capsys, damaged)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "docs.jsonl"]


def test_a_weights_file_cut_past_its_header_is_refused(tmp_path):
    model = MODELS / "static-ko-zh-48k"
    check_weight_files(model)
    size = (model / "model.safetensors").stat().st_size
    cut = _truncated_copy(model, tmp_path / "cut", size - 1)
    with pytest.raises(KalbertError, match=rf"{size - 1:,} bytes where its header describes {size:,}"):
        check_weight_files(cut)


def test_querying_with_a_model_truncated_since_the_build_is_one_line(tmp_path, capsys):
    from kalbert.search import SearchBuildConfig, build_index

    model = tmp_path / "model"
    shutil.copytree(MODELS / "static-ko-zh-48k", model)
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"id": "a", "text": "고양이가 잔다."}\n', encoding="utf-8")
    index = build_index(SearchBuildConfig(corpus=[str(corpus)], out=str(tmp_path / "index"), model=str(model)))
    (model / "model.safetensors").write_bytes((model / "model.safetensors").read_bytes()[:1000])
    capsys.readouterr()  # the build's progress bars
    _refused(["search", "query", "--index", str(index), "고양이"], capsys, "is damaged", "copy the model folder")


def test_a_binary_recipe_is_one_line(tmp_path, capsys):
    recipe = tmp_path / "model.yaml"
    recipe.write_bytes(bytes(range(256)) * 4)
    _refused(["recipe", "run", str(recipe)], capsys, f"recipe {recipe} is not UTF-8 text")


def test_onnx_advice_exports_into_a_new_folder(no_model_load):
    from kalbert.sentence.encoder import load_sentence_model

    shipped = MODELS / "sbert-ko-zh-small"
    record = (shipped / "kalbert.json").read_bytes()
    with pytest.raises(KalbertError) as refused:
        load_sentence_model(shipped, backend="onnx")
    advice = str(refused.value)
    assert f"--model {shipped} --out outputs/sbert-ko-zh-small-onnx, then pass --model " in advice
    assert "--overwrite" not in advice and f"--out {shipped}" not in advice
    assert (shipped / "kalbert.json").read_bytes() == record and "onnx" not in json.loads(record)
