"""--precision on `kalbert qa predict` and `kalbert mc predict`: auto is bf16 exactly where the (faked) CPU has
native bf16; fp32 and bf16 are obeyed. Tiny random checkpoints: no training needed."""

from __future__ import annotations

import pytest
import torch

from kalbert.cli.main import main

NATIVE = {"avx2", "avx512f", "avx512bw", "avx512_bf16"}
AVX2 = {"avx", "avx2", "fma"}
CONTEXT = "대한민국의 수도는 서울특별시이다. 서울은 한강을 끼고 있다."


@pytest.fixture(scope="module")
def tiny_qa(tmp_path_factory, ko_vocab, make_tiny_albert):
    return make_tiny_albert(tmp_path_factory.mktemp("qa") / "tiny", ko_vocab, head="AlbertForQuestionAnswering")


def test_qa_model_precision_follows_the_cpu(tiny_qa, fake_cpu, monkeypatch, capsys):
    import kalbert.tasks.qa.model as qa_model
    from kalbert.tasks.qa import QAModel

    monkeypatch.setattr(qa_model, "default_device", lambda: torch.device("cpu"))  # a GPU would decide otherwise
    fake_cpu(NATIVE)
    assert QAModel(tiny_qa).bf16 is True and QAModel(tiny_qa, precision="fp32").bf16 is False
    fake_cpu(AVX2)
    assert QAModel(tiny_qa).bf16 is False and QAModel(tiny_qa, precision="bf16").bf16 is True
    for precision in ("auto", "fp32", "bf16"):
        assert main(["qa", "predict", "--model", str(tiny_qa), "--context", CONTEXT, "--question", "수도는?",
                     "--precision", precision]) == 0
        answer = capsys.readouterr().out.splitlines()[0]
        assert answer.startswith("(no answer") or answer in CONTEXT


def test_mc_predict_runs_under_the_chosen_precision(tiny_mc_albert, fake_cpu, monkeypatch, capsys):
    import kalbert.tasks as tasks

    seen = []
    real = tasks.predict_mc

    def recording(*args, **kwargs):
        seen.append(torch.is_autocast_enabled("cpu"))
        return real(*args, **kwargs)

    monkeypatch.setattr(tasks, "predict_mc", recording)
    argv = ["mc", "predict", "--model", str(tiny_mc_albert), "--context", "전쟁이 시작되었다.", "--question", "결과",
            "--choices", "병사들이 집으로 돌아왔다.", "병사들이 전투에 파견되었다."]
    fake_cpu(NATIVE)
    assert main(argv) == 0 and main([*argv, "--precision", "fp32"]) == 0
    fake_cpu(AVX2)
    assert main(argv) == 0 and main([*argv, "--precision", "bf16"]) == 0
    assert seen == [True, False, False, True]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8 and sum(line.startswith("*") for line in lines) == 4
