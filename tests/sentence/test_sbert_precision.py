"""--precision on the encoding verbs and the hardware record of what they measured: bench run (fp32 by default,
so scores agree across CPUs), search build/query (auto), teacher encode (fp32 by default: the cache distillation
reads), and the CPU named on sentence-model cards. CPUs are faked, so the results do not depend on this one."""

from __future__ import annotations

import json

import pytest

from kalbert.cli.main import main
from kalbert.hardware import describe_cpu

NATIVE = {"avx2", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16"}
AVX2 = {"avx", "avx2", "fma"}
SENTENCES = ["배우들의 연기도 좋았다.", "한 남자가 기타를 치고 있다.", "비행기가 이륙하고 있다.",
             "아이들이 공원에서 축구를 한다."]


def test_bench_run_records_precision_and_the_cpu(tiny_sbert, tiny_data, tmp_path, fake_cpu):
    fake_cpu(AVX2, model="AMD EPYC 7B12")
    fp32, bf16 = tmp_path / "fp32.json", tmp_path / "bf16.json"
    assert main(["bench", "run", "--model", str(tiny_sbert), "--tasks", "korsts", "--out", str(fp32)]) == 0
    assert main(["bench", "run", "--model", str(tiny_sbert), "--tasks", "korsts", "--out", str(bf16),
                 "--precision", "bf16"]) == 0  # emulated here: a warning, not an error
    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (fp32, bf16))
    assert a["settings"]["precision"] == "fp32" and b["settings"]["precision"] == "bf16"
    assert b["command"].endswith("--precision bf16")
    assert a["hardware"]["cpu"] == "AMD EPYC 7B12" and describe_cpu(a["hardware"]) == "AMD EPYC 7B12, AVX2"
    assert a["results"][0]["value"] == pytest.approx(b["results"][0]["value"], abs=2.0)


def test_bf16_is_refused_for_onnx_backends(tiny_sbert, tmp_path, capsys):
    assert main(["bench", "run", "--model", str(tiny_sbert), "--tasks", "korsts", "--out", str(tmp_path / "x.json"),
                 "--backend", "onnx", "--precision", "bf16"]) == 2
    assert "--precision bf16 runs PyTorch models, not --backend onnx" in capsys.readouterr().err


def test_search_build_and_query_precision(tiny_sbert, tmp_path, fake_cpu, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    fake_cpu(NATIVE)
    native = tmp_path / "native"
    assert main(["search", "build", "--model", str(tiny_sbert), "--corpus", str(corpus), "--out", str(native)]) == 0
    meta = json.loads((native / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["precision"] == "bf16" and meta["config"]["precision"] == "auto"
    assert "avx512_bf16" in meta["hardware"]["instruction_sets"]
    fake_cpu(AVX2)
    plain = tmp_path / "plain"
    assert main(["search", "build", "--model", str(tiny_sbert), "--corpus", str(corpus), "--out", str(plain)]) == 0
    assert json.loads((plain / "kalbert.json").read_text(encoding="utf-8"))["precision"] == "fp32"
    capsys.readouterr()
    for precision in ("fp32", "bf16"):
        assert main(["search", "query", "--index", str(native), "--json", "-k", "1", "--precision", precision,
                     SENTENCES[2]]) == 0
        assert json.loads(capsys.readouterr().out)["hits"][0][0]["passage"] == SENTENCES[2]


def test_teacher_encode_precision_picks_the_cache(tiny_sbert, tmp_path, fake_cpu, capsys):
    fake_cpu(NATIVE)
    corpus = tmp_path / "ko.txt"
    corpus.write_text("\n\n".join(SENTENCES * 3) + "\n", encoding="utf-8")
    cache = tmp_path / "cache"
    common = ["teacher", "encode", "--teacher", str(tiny_sbert), "--corpus", str(corpus), "--max-sentences", "20",
              "--cache-dir", str(cache)]
    assert main(common) == 0
    assert "(fp32: fp32 as requested)" in capsys.readouterr().out  # the default: what distillation reads
    assert main([*common, "--precision", "auto"]) == 0
    assert "(bf16: native bf16 here: AVX512-BF16)" in capsys.readouterr().out
    folders = sorted(p.name for p in cache.iterdir() if (p / "teacher.json").is_file())
    assert len(folders) == 2 and sum(name.endswith("-bf16") for name in folders) == 1


def test_sentence_model_card_names_the_cpu_of_each_stage(tiny_sbert):
    meta = json.loads((tiny_sbert / "kalbert.json").read_text(encoding="utf-8"))
    stage = meta["stages"][-1]
    assert stage["hardware"]["cpu"] and "instruction_sets" in stage["hardware"]
    card = (tiny_sbert / "README.md").read_text(encoding="utf-8")
    assert f"on: {describe_cpu(stage['hardware'])}" in card and "'hardware'" not in card
