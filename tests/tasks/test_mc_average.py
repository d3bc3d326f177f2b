"""`kalbert mc average`: the mean of two COPA runs' weights, measured on dev and test, and the runs it refuses."""

from __future__ import annotations

import json

import pytest
from safetensors.torch import load_file

from kalbert.bench import read_results
from kalbert.cli.main import main
from kalbert.data import data_path
from kalbert.errors import KalbertError
from kalbert.tasks import MCTrainConfig, train_mc
from kalbert.training import LoopConfig

WEIGHTS = "model.safetensors"


@pytest.fixture(scope="module")
def copa_runs(tiny_mc_albert, tmp_path_factory):
    """Two one-epoch COPA runs from one tiny ALBERT at two learning rates, and one of another task."""
    try:
        for task in ("kobest-copa", "kobest-hellaswag"):
            for split in ("train", "dev", "test"):
                data_path(task, split)
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")
    root = tmp_path_factory.mktemp("mc-runs")
    runs = {}
    for name, task, lr in (("low", "kobest-copa", 1e-4), ("high", "kobest-copa", 1e-3),
                           ("hellaswag", "kobest-hellaswag", 1e-4)):
        train_mc(MCTrainConfig(model=str(tiny_mc_albert), task=task, out=str(root / name), max_rows=16, max_eval_rows=8,
                               loop=LoopConfig(epochs=1, batch_size=8, lr=lr, precision="fp32")))
        runs[name] = root / name
    return runs


def test_the_average_is_the_weighted_mean_measured_on_dev_and_test(copa_runs, tmp_path, capsys):
    out, results = tmp_path / "soup", tmp_path / "mc_copa_soup.json"
    assert main(["mc", "average", "--models", str(copa_runs["low"]), str(copa_runs["high"]), "--weights", "1", "3",
                 "--max-eval-rows", "8", "--precision", "fp32", "--out", str(out), "--results", str(results)]) == 0
    low, high, averaged = (load_file(folder / WEIGHTS) for folder in (copa_runs["low"], copa_runs["high"], out))
    moved = 0
    for key, tensor in averaged.items():
        if tensor.is_floating_point():
            expected = 0.25 * low[key].float() + 0.75 * high[key].float()
            assert (tensor - expected).abs().max() < 1e-6, key
            moved += int(not low[key].equal(high[key]))
    assert moved > 0  # the two runs did end apart, so the mean is a new model
    record = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))
    assert (record["kind"], record["task"], record["config"]["weights"]) == ("multiple-choice", "kobest-copa",
                                                                               [0.25, 0.75])
    assert record["select"]["split"] == "dev" and 0 <= record["select"]["accuracy"] <= 100
    assert record["report"]["split"] == "test" and record["report"]["n"] == 8
    assert [s["lr"] for s in record["sources"]] == [1e-4, 1e-3]
    assert {p["path"] for p in record["parents"]} >= {str(copa_runs["low"]), str(copa_runs["high"])}
    printed = capsys.readouterr().out
    assert "the average of 2 runs" in printed and "on the test split" in printed
    (result,) = read_results(results).results
    assert (result["task"], result["split"], result["selected_on"]) == ("kobest-copa", "test", "dev")
    # the average is a multiple-choice folder like any other: predict reads it
    assert main(["mc", "predict", "--model", str(out), "--context", "전쟁이 시작되었다.", "--question", "결과",
                 "--choices", "병사들이 집으로 돌아왔다.", "병사들이 전투에 파견되었다."]) == 0


def test_runs_of_other_tasks_single_runs_and_other_folders_are_refused(copa_runs, tiny_mc_albert, tmp_path, capsys):
    def refused(*models: str) -> str:
        assert main(["mc", "average", "--models", *models, "--out", str(tmp_path / "x")]) == 2
        return capsys.readouterr().err

    assert "differ in task" in refused(str(copa_runs["low"]), str(copa_runs["hellaswag"]))
    assert "at least two models" in refused(str(copa_runs["low"]))
    assert "is not a multiple-choice model folder" in refused(str(copa_runs["low"]), str(tiny_mc_albert))
    assert not (tmp_path / "x").exists()


def test_an_average_is_not_averaged_again(copa_runs, tmp_path, capsys):
    soup = tmp_path / "soup"
    assert main(["mc", "average", "--models", str(copa_runs["low"]), str(copa_runs["high"]), "--max-eval-rows", "4",
                 "--precision", "fp32", "--out", str(soup)]) == 0
    capsys.readouterr()
    assert main(["mc", "average", "--models", str(soup), str(copa_runs["low"]), "--out", str(tmp_path / "x")]) == 2
    assert "is itself an average" in capsys.readouterr().err
