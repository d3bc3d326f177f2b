"""Multiple-choice fine-tuning of a tiny random ALBERT on a KoBEST COPA slice, and prediction."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kalbert import datasets
from kalbert.bench import read_results
from kalbert.cli.main import main
from kalbert.datasets import MCExample
from kalbert.errors import KalbertError
from kalbert.tasks import MC_TASKS, MCTrainConfig, predict_mc, train_mc
from kalbert.tasks.multiple_choice import format_choices


@pytest.fixture(scope="module")
def tiny_albert(tmp_path_factory, ko_vocab) -> Path:
    """A random-init AlbertForMultipleChoice (hidden 32, 2 layers) with the test vocabulary's tokenizer."""
    from transformers import AlbertConfig, AlbertForMultipleChoice, AutoTokenizer

    folder = tmp_path_factory.mktemp("tiny-albert")
    tokenizer = AutoTokenizer.from_pretrained(str(ko_vocab))
    config = AlbertConfig(
        vocab_size=len(tokenizer),
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    AlbertForMultipleChoice(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    shutil.copy2(ko_vocab / "spiece.model", folder / "spiece.model")
    return folder


@pytest.fixture(autouse=True)
def _copa_present():
    try:
        for split in ("train", "dev", "test"):
            datasets.data_path("kobest-copa", split)
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")


def test_copa_questions_become_connectives():
    example = MCExample("전쟁이 시작되었다.", "결과", ("a", "b"), 1, "1")
    assert format_choices(example) == [("전쟁이 시작되었다.", "그래서 a"), ("전쟁이 시작되었다.", "그래서 b")]
    assert MC_TASKS["xcopa-zh"].train == "dev" and MC_TASKS["chid"].report == "test_public"


def test_train_selects_on_dev_and_reports_test(tiny_albert, tmp_path):
    config = MCTrainConfig(
        model=str(tiny_albert),
        task="kobest-copa",
        out=str(tmp_path / "mc"),
        epochs=2,
        batch_size=8,
        learning_rate=1e-3,
        max_train_examples=32,
        max_eval_examples=16,
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


def test_cli_train_writes_results_and_predict_prints_choices(tiny_albert, tmp_path, capsys):
    out, results = tmp_path / "mc", tmp_path / "mc_copa.json"
    assert (
        main(
            [
                "mc",
                "train",
                "--model",
                str(tiny_albert),
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
                "--max-train-examples",
                "16",
                "--max-eval-examples",
                "8",
                "--note",
                "random init",
            ]
        )
        == 0
    )
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


def test_a_model_that_is_not_albert_is_refused(tmp_path, capsys):
    (tmp_path / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")
    assert main(["mc", "train", "--model", str(tmp_path), "--task", "kobest-copa", "--out", str(tmp_path / "o")]) == 2
    assert "not an ALBERT" in capsys.readouterr().err
    assert main(["mc", "predict", "--model", str(tmp_path / "x"), "--context", "c", "--choices", "a", "b"]) == 2
    assert "no config.json" in capsys.readouterr().err
