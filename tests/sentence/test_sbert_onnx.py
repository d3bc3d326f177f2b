"""ONNX serving contract: `kalbert sbert export --backend onnx` writes files that plain sentence-transformers
loads in a fresh process and that give PyTorch's vectors (int8: nearly); kalbert refuses ONNX files older
than the weights, missing ones and missing packages with one line naming the fix; search and bench run on them."""

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
from kalbert.io import sha256_file
from kalbert.sentence import encode, load_sentence_model
from kalbert.sentence.backends import INT8_CONFIGS, OnnxExportConfig, cpu_int8_config, export_onnx

# The int8 file sentence-transformers' export_dynamic_quantized_onnx_model writes for each preset, from its
# documented behaviour (sentence_transformers/backend/quantize.py: ``model_{weights dtype}_{preset}.onnx``, and
# optimum's AutoQuantizationConfig.avx2 quantises the weights to unsigned int8, the other presets to signed).
LIBRARY_INT8_FILES = {"avx2": "onnx/model_quint8_avx2.onnx", "avx512": "onnx/model_qint8_avx512.onnx",
                      "avx512_vnni": "onnx/model_qint8_avx512_vnni.onnx", "arm64": "onnx/model_qint8_arm64.onnx"}
AVX2 = {"sse4_2", "avx", "avx2", "fma"}
AVX512 = AVX2 | {"avx512f", "avx512bw", "avx512vl"}
AVX512_VNNI = AVX512 | {"avx512_vnni"}
AMX = AVX512_VNNI | {"avx512_bf16", "amx_tile", "amx_bf16", "amx_int8", "avx_vnni"}

SENTENCES = ["배우들의 연기도 좋았다.", "한 남자가 기타를 치고 있다.", "비행기가 이륙하고 있다.",
             "아이들이 공원에서 축구를 하고 있다.", "一架飞机正在起飞。"]

FRESH = """
import json, sys, numpy as np
from sentence_transformers import SentenceTransformer
folder, files, out, sentences = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4:]
np.savez(out, **{backend: SentenceTransformer(folder, backend="onnx", model_kwargs={"file_name": name}).encode(
    sentences, convert_to_numpy=True) for backend, name in files.items()})
"""


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.fixture(scope="module")
def onnx_sbert(tiny_sbert, tmp_path_factory):
    """``tiny_sbert`` with ONNX fp32 and int8 files (exported once for the module)."""
    out = tmp_path_factory.mktemp("onnx") / "tiny-onnx"
    return export_onnx(OnnxExportConfig(model=str(tiny_sbert), out=str(out), quantize="int8"))


@pytest.fixture(scope="module")
def torch_vectors(tiny_sbert) -> np.ndarray:
    return encode(load_sentence_model(tiny_sbert), SENTENCES)


@pytest.mark.parametrize("flags, arch, preset", [
    (AVX2, "x86_64", "avx2"),
    (AVX2 | {"avx_vnni"}, "x86_64", "avx2"),  # AVX-VNNI without AVX-512: no preset uses it
    (AVX512, "x86_64", "avx512"),
    (AVX512_VNNI, "x86_64", "avx512_vnni"),
    (AMX, "x86_64", "avx512_vnni"),
    ({"fp", "asimd", "asimddp"}, "aarch64", "arm64"),
    (set(), "arm64", "arm64"),
    (set(), "x86_64", "avx2"),  # nothing known (no /proc/cpuinfo): what every x86-64 runs
])
def test_int8_preset_follows_the_cpu(fake_cpu, flags, arch, preset):
    fake_cpu(flags, arch=arch)
    assert cpu_int8_config() == preset


def test_export_adds_recorded_onnx_files_to_a_copy(onnx_sbert, tiny_sbert):
    meta = json.loads((onnx_sbert / "kalbert.json").read_text(encoding="utf-8"))
    record = meta["onnx"]
    assert record["int8_config"] == cpu_int8_config() and record["int8_config"] in INT8_CONFIGS
    files = {"onnx": "onnx/model.onnx", "onnx-int8": LIBRARY_INT8_FILES[record["int8_config"]]}
    assert record["files"] == files
    assert sorted(p.name for p in (onnx_sbert / "onnx").iterdir()) == sorted(f[5:] for f in files.values())
    assert not (tiny_sbert / "onnx").exists()  # the source folder is left as it was
    assert record["hardware"]["cpu"] and "instruction_sets" in record["hardware"]
    assert record["weights"] == {"model.safetensors": sha256_file(tiny_sbert / "model.safetensors")}
    assert record["min_cosine_vs_torch"]["onnx"] >= 0.9999
    assert meta["stages"][-1]["stage"] == "onnx-export"
    assert "backend='onnx'" in (onnx_sbert / "README.md").read_text(encoding="utf-8")


def test_int8_export_on_an_avx2_only_cpu_records_the_file_the_library_wrote(tiny_sbert, tmp_path, fake_cpu):
    """The case that broke on AVX2-only machines: sentence-transformers writes model_quint8_avx2.onnx."""
    fake_cpu(AVX2, model="AMD EPYC 7B12")
    out = export_onnx(OnnxExportConfig(model=str(tiny_sbert), out=str(tmp_path / "avx2"), quantize="int8"))
    record = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))["onnx"]
    assert record["int8_config"] == "avx2"
    assert record["files"]["onnx-int8"] == "onnx/model_quint8_avx2.onnx"
    assert (out / "onnx" / "model_quint8_avx2.onnx").is_file()
    assert record["hardware"]["cpu"] == "AMD EPYC 7B12" and "avx512f" not in record["hardware"]["instruction_sets"]
    assert record["min_cosine_vs_torch"]["onnx-int8"] >= 0.98


def test_a_folder_exported_on_another_cpu_still_loads(onnx_sbert, torch_vectors, fake_cpu, monkeypatch, caplog):
    preset = json.loads((onnx_sbert / "kalbert.json").read_text(encoding="utf-8"))["onnx"]["int8_config"]
    fake_cpu(AVX512_VNNI if preset == "avx2" else AVX2, model="Other CPU")  # a CPU that suits another preset
    assert cosines(encode(load_sentence_model(onnx_sbert, backend="onnx"), SENTENCES), torch_vectors).min() >= 0.9999
    with caplog.at_level("WARNING", logger="kalbert.sentence.backends"):
        int8 = encode(load_sentence_model(onnx_sbert, backend="onnx-int8"), SENTENCES)
    assert cosines(int8, torch_vectors).min() >= 0.98
    assert f"was quantised for {preset}" in caplog.text

    import onnxruntime

    def refuses(*args, **kwargs):
        raise RuntimeError("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for "
                           "MatMulInteger(10) node\nmore detail")

    monkeypatch.setattr(onnxruntime, "InferenceSession", refuses)
    with pytest.raises(KalbertError, match=rf"cannot run model_q?u?int8_{preset}\.onnx \(int8 preset {preset}\) "
                                           r"on this CPU \(Other, (AVX2|AVX-512 VNNI)\): "
                                           r".*NOT_IMPLEMENTED.*use --backend onnx"):
        load_sentence_model(onnx_sbert, backend="onnx-int8")


def test_fresh_plain_sentence_transformer_matches_pytorch(onnx_sbert, torch_vectors, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": ""}
    files = json.loads((onnx_sbert / "kalbert.json").read_text(encoding="utf-8"))["onnx"]["files"]
    out = tmp_path / "theirs.npz"
    subprocess.run([sys.executable, "-c", FRESH, str(onnx_sbert), json.dumps(files), str(out), *SENTENCES],
                   check=True, env=env, cwd=tmp_path, capture_output=True)
    theirs = np.load(out)
    assert sorted(theirs.files) == ["onnx", "onnx-int8"]
    assert cosines(theirs["onnx"], torch_vectors).min() >= 0.9999
    assert cosines(theirs["onnx-int8"], torch_vectors).min() >= 0.98


def test_load_sentence_model_runs_each_backend(onnx_sbert, torch_vectors):
    fp32 = encode(load_sentence_model(onnx_sbert, backend="onnx"), SENTENCES)
    int8 = encode(load_sentence_model(onnx_sbert, backend="onnx-int8"), SENTENCES)
    assert cosines(fp32, torch_vectors).min() >= 0.9999
    assert cosines(int8, torch_vectors).min() >= 0.98
    np.testing.assert_allclose(encode(load_sentence_model(onnx_sbert), SENTENCES), torch_vectors, atol=1e-6)


def test_onnx_older_than_the_weights_is_refused_until_re_exported(onnx_sbert, tmp_path, capsys):
    from safetensors.torch import load_file, save_file

    stale = tmp_path / "stale"
    shutil.copytree(onnx_sbert, stale)
    weights = load_file(stale / "model.safetensors")
    name = next(iter(weights))
    weights[name] = weights[name] + 0.01  # training went on after the export
    save_file(weights, stale / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(KalbertError, match=r"older than the weights.*export a copy again: kalbert sbert export "
                                           r"--backend onnx --quantize int8 .*--out outputs/stale-onnx, then pass"):
        load_sentence_model(stale, backend="onnx")
    load_sentence_model(stale)  # PyTorch still loads the new weights
    assert main(["sbert", "export", "--backend", "onnx", "--model", str(stale), "--out", str(stale),
                 "--overwrite"]) == 0
    assert "--backend onnx: onnx/model.onnx" in capsys.readouterr().out
    load_sentence_model(stale, backend="onnx")
    with pytest.raises(KalbertError, match="no int8 ONNX file.*--quantize int8"):  # not asked for this time
        load_sentence_model(stale, backend="onnx-int8")


def test_bad_input_is_one_clear_line(tiny_albert, tiny_sbert, onnx_sbert, tmp_path, capsys, monkeypatch):
    with pytest.raises(KalbertError, match="not a sentence model"):
        load_sentence_model(tiny_albert, backend="onnx")
    with pytest.raises(KalbertError, match=r"has no ONNX file.*kalbert sbert export --backend onnx"):
        load_sentence_model(tiny_sbert, backend="onnx")
    with pytest.raises(KalbertError, match="unknown backend"):
        load_sentence_model(tiny_sbert, backend="tensorrt")
    out = str(tmp_path / "out")
    assert main(["sbert", "export", "--backend", "onnx", "--model", str(tiny_albert), "--out", out]) == 2
    assert "not a sentence model" in capsys.readouterr().err
    assert main(["sbert", "export", "--quantize", "int8", "--model", str(tiny_albert), "--out", out]) == 2
    assert "need --backend onnx" in capsys.readouterr().err
    assert main(["sbert", "export", "--backend", "onnx", "--eval", "korsts:dev", "--model", str(tiny_sbert),
                 "--out", out]) == 2
    assert "--eval cannot be used with --backend onnx" in capsys.readouterr().err
    assert main(["sbert", "export", "--backend", "onnx", "--int8-config", "avx9", "--model", str(tiny_sbert),
                 "--out", out]) == 2
    assert "unknown int8 preset" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if the onnx extra were not installed
    with pytest.raises(KalbertError, match=r"pip install -e '\.\[onnx\]'"):
        load_sentence_model(onnx_sbert, backend="onnx")


def test_search_build_and_query_with_onnx(onnx_sbert, tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    index = tmp_path / "index"
    assert main(["search", "build", "--model", str(onnx_sbert), "--corpus", str(corpus), "--out", str(index),
                 "--backend", "onnx-int8"]) == 0
    assert json.loads((index / "kalbert.json").read_text(encoding="utf-8"))["config"]["backend"] == "onnx-int8"
    capsys.readouterr()
    assert main(["search", "query", "--index", str(index), "--json", "-k", "1", SENTENCES[2]]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["model_backend"] == "onnx-int8" and result["hits"][0][0]["passage"] == SENTENCES[2]
    assert main(["search", "query", "--index", str(index), "--json", "--backend", "onnx", SENTENCES[0]]) == 0
    assert json.loads(capsys.readouterr().out)["model_backend"] == "onnx"


def test_bench_run_records_the_backend(onnx_sbert, tiny_data, tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "run", "--model", str(onnx_sbert), "--tasks", "korsts", "--out", str(out),
                 "--backend", "onnx"]) == 0
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["settings"]["backend"] == "onnx" and results["command"].endswith("--backend onnx")
    assert results["results"][0]["value"] is not None
    assert main(["bench", "run", "--model", "tfidf", "--out", str(out), "--backend", "onnx"]) == 2
    assert "not the baseline 'tfidf'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, example", [
    (["sbert", "export"], "kalbert sbert export --backend onnx --quantize int8"),
    (["search", "build"], "--backend onnx-int8"),
    (["bench", "run"], "--backend onnx-int8"),
])
def test_help_has_an_onnx_example(argv, example, capsys):
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    assert example in capsys.readouterr().out
