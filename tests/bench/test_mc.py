"""Multiple-choice fine-tuning of a tiny random ALBERT on a KoBEST COPA slice, and prediction."""

from __future__ import annotations

import json

import pytest

from kalbert.bench import read_results
from kalbert.cli.main import main
from kalbert.data import MCExample, data_path, load_mc
from kalbert.data.loaders import BOOLQ_CHOICES
from kalbert.errors import KalbertError
from kalbert.tasks import MC_TASKS, MCTrainConfig, predict_mc, train_mc
from kalbert.tasks.multiple_choice import format_choices
from kalbert.training import LoopConfig


@pytest.fixture(autouse=True)
def _copa_present():
    try:
        for split in ("train", "dev", "test"):
            data_path("kobest-copa", split)
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")


def test_copa_questions_become_connectives():
    example = MCExample("전쟁이 시작되었다.", "결과", ("a", "b"), 1, "1")
    assert format_choices(example) == [("전쟁이 시작되었다.", "그래서 a"), ("전쟁이 시작되었다.", "그래서 b")]
    assert MC_TASKS["xcopa-zh"].train == "dev" and MC_TASKS["chid"].report == "test_public"


def test_boolq_is_read_as_no_or_yes_after_the_question():
    try:
        examples = load_mc("kobest-boolq", "dev")
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")
    assert len(examples) == 700 and {e.choices for e in examples} == {BOOLQ_CHOICES}
    assert {e.label for e in examples} == {0, 1} and MC_TASKS["kobest-boolq"].report == "test"
    (passage, no), (_, yes) = format_choices(examples[0])
    assert passage == examples[0].context and yes == f"{examples[0].question} 예" and no.endswith(" 아니요")


def test_train_selects_on_dev_and_reports_test(tiny_mc_albert, tmp_path):
    config = MCTrainConfig(
        model=str(tiny_mc_albert),
        task="kobest-copa",
        out=str(tmp_path / "mc"),
        max_rows=32,
        max_eval_rows=16,
        loop=LoopConfig(epochs=2, batch_size=8, lr=1e-3),
    )
    summary = train_mc(config)
    assert summary["report"] == {
        "split": "test",
        "accuracy": summary["report"]["accuracy"],
        "n": 16,
        "n_split": 1000,
        "subset": True,
    }
    assert 0 <= summary["report"]["accuracy"] <= 100
    assert [h["epoch"] for h in summary["history"]] == [1, 2] and "select_accuracy" in summary["history"][0]
    assert summary["selected_epoch"] in (1, 2)
    assert json.loads((tmp_path / "mc" / "kalbert.json").read_text(encoding="utf-8"))["task"] == "kobest-copa"
    with pytest.raises(KalbertError, match="already exists"):
        train_mc(config)
    probs = predict_mc(
        tmp_path / "mc",
        "전쟁이 시작되었다.",
        ["병사들이 집으로 돌아왔다.", "병사들이 전투에 파견되었다."],
        question="결과",
    )
    assert len(probs) == 2 and sum(probs) == pytest.approx(1.0)


def test_cli_train_writes_results_and_predict_prints_choices(tiny_mc_albert, tmp_path, capsys):
    out, results = tmp_path / "mc", tmp_path / "mc_copa.json"
    assert (
        main(
            [
                "mc",
                "train",
                "--model",
                str(tiny_mc_albert),
                "--task",
                "kobest-copa",
                "--out",
                str(out),
                "--results",
                str(results),
                "--epochs",
                "1",
                "--batch-size",
                "8",
                "--max-rows",
                "16",
                "--max-eval-rows",
                "8",
                "--note",
                "random init",
                "--precision",
                "fp32",
            ]
        )
        == 0
    )
    meta = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))
    assert (meta["precision"], meta["precision_reason"]) == ("fp32", "fp32 as requested")
    assert not (tmp_path / "mc.partial").exists()
    printed = capsys.readouterr().out
    assert "accuracy" in printed and "on the test split" in printed
    (record,) = read_results(results).results
    assert (record["task"], record["split"], record["setting"], record["n"]) == (
        "kobest-copa",
        "test",
        "fine-tuned",
        8,
    )
    assert read_results(results).note == "random init"
    assert (
        main(
            [
                "mc",
                "predict",
                "--model",
                str(out),
                "--context",
                "전쟁이 시작되었다.",
                "--question",
                "결과",
                "--choices",
                "병사들이 집으로 돌아왔다.",
                "병사들이 전투에 파견되었다.",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and sum(line.startswith("*") for line in lines) == 1


def test_a_model_that_is_neither_albert_nor_bert_is_refused(tmp_path, capsys):
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}', encoding="utf-8")
    assert main(["mc", "train", "--model", str(tmp_path), "--task", "kobest-copa", "--out", str(tmp_path / "o")]) == 2
    assert "not one of albert, bert" in capsys.readouterr().err
    assert main(["mc", "predict", "--model", str(tmp_path / "x"), "--context", "c", "--choices", "a", "b"]) == 2
    assert "folder not found" in capsys.readouterr().err


def test_examples_with_fewer_choices_never_pick_the_padding(tiny_mc_albert):
    """C3 mixes 2- to 4-choice questions in one batch: padded choices get -inf and no probability."""
    import torch
    from transformers import AlbertForMultipleChoice, AutoTokenizer

    from kalbert.tasks.multiple_choice import _choice_logits

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_mc_albert))
    model = AlbertForMultipleChoice.from_pretrained(str(tiny_mc_albert)).eval()
    examples = [MCExample("문장.", "질문?", ("가", "나"), 1, "a"),
                MCExample("문장.", "질문?", ("가", "나", "다", "라"), 3, "b")]
    with torch.no_grad():
        logits = _choice_logits(model, tokenizer, examples, 32)
    assert logits.shape == (2, 4) and torch.isinf(logits[0, 2:]).all() and torch.isfinite(logits[1]).all()
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor([1, 3]))
    assert torch.isfinite(loss) and torch.softmax(logits, -1)[0, 2:].sum() == 0
