"""Teacher backends: `auto` fills the cache with the fastest backend whose vectors keep cosine >= 0.999 to torch
fp32 (stored beside torch's), a named backend below that is refused, bf16 is tried only where it is native,
numpy teachers run as they are, every fill records its throughput, and the distilled student's card quotes it."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.sentence.card import metrics_and_stages
from kalbert.teachers import fastest
from kalbert.teachers.backends import load_teacher, teachers_home
from kalbert.teachers.cache import META_FILE, open_cache
from kalbert.teachers.fastest import candidate_backends, min_cosine

WORDS = ["배우들의", "연기도", "좋았다", "한", "남자가", "기타를", "치고", "있다", "아이들이", "공원에서", "축구를",
         "하고", "비행기가", "이륙하고", "영화는", "정말", "지루했다", "그리고", "다른", "사람들은", "노래를", "부른다"]
SENTENCES = list(dict.fromkeys(" ".join(random.Random(i).choices(WORDS, k=2 + i % 25)) + "." for i in range(320)))
AVX512_VNNI = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"}


needs_onnx = pytest.mark.skipif(not fastest._onnx_installed(), reason="the onnx extra is not installed")


class NumpyTeacher:
    """A teacher with no backend but its own (like use-multilingual)."""

    name, languages, dimension, fingerprint, backends = "numpy", ["ko"], 3, "numpy-1", ("numpy",)

    def encode(self, texts: list[str]) -> np.ndarray:
        vectors = np.array([[len(t), t.count(" "), 1.0] for t in texts], dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _lossy(monkeypatch, backend: str) -> None:
    """Make ``backend`` give vectors far from torch's (rolled axes), as a badly quantised file would."""
    real = fastest.backend_encoder

    def encoder(teacher, name):
        if name != backend:
            return real(teacher, name)
        return lambda texts: np.roll(teacher.encode(texts), 1, axis=1)

    monkeypatch.setattr(fastest, "backend_encoder", encoder)


@needs_onnx
def test_auto_stores_the_fastest_backend_within_tolerance_and_records_the_fill(st_teacher, tmp_path, monkeypatch):
    monkeypatch.setattr(fastest, "MIN_SENTENCES_TO_PROBE", 100)
    teacher = load_teacher(str(st_teacher))
    cache = open_cache(teacher, str(tmp_path), "auto")
    assert cache.fill(SENTENCES, progress=False) == len(SENTENCES)
    (fill,) = cache.fills
    table = {row["backend"]: row for row in fill["probe"]}
    assert {"torch", "onnx", "onnx-int8"} <= set(table) and fill["probe_sentences"] == fastest.PROBE_SENTENCES
    allowed = [row for row in table.values() if row["min_cosine"] >= fastest.MIN_COSINE]
    assert fill["backend"] == max(allowed, key=lambda row: row["sentences_per_second"])["backend"]
    assert table[fill["backend"]]["chosen"] and fill["min_cosine"] >= fastest.MIN_COSINE
    assert min_cosine(teacher.encode(SENTENCES), cache.vectors(SENTENCES)) >= fastest.MIN_COSINE
    assert fill["sentences"] == len(SENTENCES) and fill["sentences_per_second"] > 0 and fill["cpu"]
    assert json.loads((cache.folder / META_FILE).read_text())["fills"] == [fill]
    assert cache.fill(SENTENCES, progress=False) == 0 and len(cache.fills) == 1  # nothing to encode: no record
    # the export is cached under the teachers home by fingerprint, never in the teacher's folder
    assert (teachers_home() / "onnx" / teacher.fingerprint / fastest.ONNX_RECORD).is_file()
    assert not list(st_teacher.rglob("*.onnx"))


@needs_onnx
def test_onnx_batches_are_padded_to_their_own_longest_sentence(st_teacher, tmp_path, monkeypatch):
    import onnx

    from kalbert import onnx_files as backends

    widths = []
    real = backends.load_onnx_model

    def spying(folder, file_name):
        model = real(folder, file_name)
        forward = model[0].forward

        def recording(features, *args, **kwargs):
            widths.append(features["input_ids"].shape[1])
            return forward(features, *args, **kwargs)

        model[0].forward = recording
        return model

    monkeypatch.setattr(backends, "load_onnx_model", spying)
    teacher = load_teacher(str(st_teacher))
    cache = open_cache(teacher, str(tmp_path), "onnx")
    cache.fill(SENTENCES, progress=False)
    assert cache.fills[0]["backend"] == "onnx" and cache.fills[0]["min_cosine"] >= fastest.MIN_COSINE
    assert min_cosine(teacher.encode(SENTENCES), cache.vectors(SENTENCES)) >= fastest.MIN_COSINE
    assert len(set(widths)) > 2  # length-sorted batches, each as wide as its longest sentence
    folder = teachers_home() / "onnx" / teacher.fingerprint
    for name in json.loads((folder / fastest.ONNX_RECORD).read_text())["files"].values():
        graph = onnx.load(str(folder / name), load_external_data=False).graph
        assert all(dim.dim_param for tensor in graph.input for dim in tensor.type.tensor_type.shape.dim)


def test_a_named_backend_below_tolerance_is_refused_and_auto_passes_it_over(st_teacher, tmp_path, monkeypatch,
                                                                          fake_cpu):
    fake_cpu(AVX512_VNNI | {"avx512_bf16"})
    monkeypatch.setattr(fastest, "_onnx_installed", lambda: False)  # torch and torch-bf16 only: no export here
    monkeypatch.setattr(fastest, "MIN_SENTENCES_TO_PROBE", 100)
    _lossy(monkeypatch, "torch-bf16")
    teacher = load_teacher(str(st_teacher))
    refused = open_cache(teacher, str(tmp_path / "named"), "torch-bf16")
    with pytest.raises(KalbertError, match=r"torch-bf16 gives vectors at cosine -?0\.\d{6} to torch fp32 on 256 "
                                           r"probe sentences, below 0\.999"):
        refused.fill(SENTENCES, progress=False)
    assert len(refused) == 0 and not refused.fills
    cache = open_cache(teacher, str(tmp_path / "auto"), "auto")
    cache.fill(SENTENCES, progress=False)
    table = {row["backend"]: row for row in cache.fills[0]["probe"]}
    assert cache.fills[0]["backend"] == "torch" and table["torch-bf16"]["min_cosine"] < 0.5


def test_the_cli_refuses_a_named_backend_below_tolerance_in_one_line(st_teacher, ko_corpus, tmp_path, monkeypatch,
                                                                     capsys):
    _lossy(monkeypatch, "torch-bf16")
    code = main(["teacher", "encode", "--teacher", str(st_teacher), "--corpus", str(ko_corpus), "--max-sentences",
                 "120", "--cache-dir", str(tmp_path), "--teacher-backend", "torch-bf16"])
    (error,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("kalbert: error")]
    assert code == 2 and "--teacher-backend torch-bf16 gives vectors at cosine" in error


@pytest.mark.parametrize("flags, native", [(AVX512_VNNI, False), (AVX512_VNNI | {"avx512_bf16"}, True),
                                           ({"fp", "asimd", "bf16"}, True)])
def test_torch_bf16_is_a_candidate_only_where_bf16_is_native(st_teacher, fake_cpu, flags, native):
    fake_cpu(flags, arch="aarch64" if "asimd" in flags else "x86_64")
    found = candidate_backends(load_teacher(str(st_teacher)))
    assert found[0] == "torch" and ("torch-bf16" in found) == native


def test_a_numpy_teacher_runs_as_it_is_and_records_each_fill(tmp_path, monkeypatch):
    monkeypatch.setattr(fastest, "MIN_SENTENCES_TO_PROBE", 1)
    cache = open_cache(NumpyTeacher(), str(tmp_path), "auto")
    assert cache.fill(SENTENCES[:50], progress=False) == 50
    assert cache.fill(SENTENCES[:80], progress=False) == 30
    fills = json.loads((cache.folder / META_FILE).read_text())["fills"]
    assert [(f["backend"], f["sentences"], f["min_cosine"], f["probe_sentences"]) for f in fills] == [
        ("numpy", 50, None, 0), ("numpy", 30, None, 0)]
    with pytest.raises(KalbertError, match="runs on numpy, not --teacher-backend onnx"):
        open_cache(NumpyTeacher(), str(tmp_path), "onnx").fill(SENTENCES[80:90], progress=False)


def test_the_card_quotes_the_teacher_encoding_throughput():
    hardware = {"cpu": "AMD EPYC 7B13 64-Core Processor", "arch": "x86_64",
                "instruction_sets": ["avx2", "avx512f", "avx512_vnni"]}
    fill = {"backend": "onnx-int8", "sentences": 150000, "seconds": 360.0, "sentences_per_second": 416.7}
    lines = metrics_and_stages({"stages": [{"stage": "distill", "command": "kalbert sbert distill", "config": {},
                                            "teacher_encoding": [fill], "hardware": hardware}]}, "none")
    assert ("  teacher encoded 150,000 sentences at 416.7 sentences/s with onnx-int8 on AMD EPYC 7B13, AVX-512 VNNI"
            in lines)
    assert not any("teacher_encoding" in line for line in lines)


@needs_onnx
def test_distillation_records_the_teacher_encoding_on_its_card(st_teacher, ko_corpus, tmp_path):
    from kalbert.sentence.config import DistillConfig
    from kalbert.sentence.distill import distill_student
    from kalbert.training import LoopConfig

    config = DistillConfig(student=str(st_teacher), teacher=str(st_teacher), corpus=[str(ko_corpus)],
                           max_sentences=200, out=str(tmp_path / "kd"), dev_rows=40, cache_dir=str(tmp_path / "c"),
                           teacher_backend="onnx", loop=LoopConfig(lr=1e-3, batch_size=32, max_steps=2, eval_steps=2))
    out = distill_student(config).out
    (fill,) = json.loads((out / "kalbert.json").read_text())["stages"][-1]["teacher_encoding"]
    assert fill["backend"] == "onnx" and fill["sentences"] >= 190
    assert "sentences/s with onnx on" in (out / "README.md").read_text()
