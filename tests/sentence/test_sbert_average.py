"""Weight averaging: the mean of the weights, a record naming every source, refusals that name the mismatch."""

from __future__ import annotations

import json
import shutil

import pytest
from safetensors.torch import load_file, save_file

from kalbert.cli.main import main
from kalbert.lineage import training_splits

WEIGHTS = "model.safetensors"


def _shifted_copy(source, folder, shift: float, trained_on: str):
    """A copy of ``source`` whose floating weights are moved by ``shift``, recorded as STS-trained on ``trained_on``
    and as measured once."""
    shutil.copytree(source, folder)
    tensors = load_file(folder / WEIGHTS)
    save_file({k: t + shift if t.is_floating_point() else t for k, t in tensors.items()}, folder / WEIGHTS,
              metadata={"format": "pt"})
    meta = json.loads((folder / "kalbert.json").read_text(encoding="utf-8"))
    meta["stages"].append({"stage": "sts", "config": {"model": str(source), "train": [trained_on]}})
    # as if the source were itself an average: its score must not be shown as the new average's
    meta.setdefault("metrics", []).append({"stage": "average", "data": "korsts:dev", "metric": "spearman_cosine",
                                           "value": 0.5})
    (folder / "kalbert.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def test_average_is_the_weighted_mean_and_names_every_source(tiny_sbert, tmp_path, capsys):
    from sentence_transformers import SentenceTransformer

    first = _shifted_copy(tiny_sbert, tmp_path / "a", 0.0, "korsts")
    second = _shifted_copy(tiny_sbert, tmp_path / "b", 1.0, "afqmc")
    out = tmp_path / "soup"
    assert main(["sbert", "average", "--models", str(first), str(second), "--weights", "1", "3",
                 "--out", str(out)]) == 0
    assert "spearman" not in capsys.readouterr().out  # no --eval: nothing measured
    original, averaged = load_file(tiny_sbert / WEIGHTS), load_file(out / WEIGHTS)
    for key, tensor in original.items():
        expected = tensor + 0.75 if tensor.is_floating_point() else tensor
        assert (averaged[key] - expected).abs().max() < 1e-5, key
    assert SentenceTransformer(str(out)).encode(["배우들의 연기도 좋았다."]).shape[0] == 1
    record = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))
    assert record["stages"][-1]["stage"] == "average"
    assert record["stages"][-1]["config"]["weights"] == [0.25, 0.75]
    assert {"korsts:train", "afqmc:train"} <= training_splits(out)
    assert {p["path"] for p in record["parents"]} >= {str(first), str(second)}
    assert main(["sbert", "average", "--models", str(first), str(second), "--eval", "korsts:train",
                 "--out", str(tmp_path / "refused")]) == 2
    assert "was trained on korsts:train" in capsys.readouterr().err


def test_models_of_different_shapes_or_a_single_model_are_refused(tiny_sbert, tiny_teacher, tmp_path, capsys):
    assert main(["sbert", "average", "--models", str(tiny_sbert), str(tiny_teacher),
                 "--out", str(tmp_path / "x")]) == 2
    assert "differ in modules.json" in capsys.readouterr().err
    assert main(["sbert", "average", "--models", str(tiny_sbert), "--out", str(tmp_path / "y")]) == 2
    assert "at least two models" in capsys.readouterr().err
    assert main(["sbert", "average", "--models", str(tiny_sbert), str(tiny_sbert), "--weights", "1",
                 "--out", str(tmp_path / "z")]) == 2
    assert "1 weights for 2 models" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


@pytest.mark.parametrize("weights", [["-1", "2"], ["0", "0"]])
def test_negative_or_zero_weights_are_refused(tiny_sbert, tmp_path, capsys, weights):
    assert main(["sbert", "average", "--models", str(tiny_sbert), str(tiny_sbert), "--weights", *weights,
                 "--out", str(tmp_path / "w")]) == 2
    assert "non-negative" in capsys.readouterr().err


def test_an_average_measured_on_several_splits_prints_their_mean(tiny_sbert, tmp_path, capsys):
    first = _shifted_copy(tiny_sbert, tmp_path / "a", 0.0, "korsts")
    second = _shifted_copy(tiny_sbert, tmp_path / "b", 0.01, "korsts")
    assert main(["sbert", "average", "--models", str(first), str(second), "--eval", "korsts:dev", "stsb-zh:dev",
                 "--out", str(tmp_path / "soup")]) == 0
    lines = capsys.readouterr().out.splitlines()
    scores = [float(line.rsplit(": ", 1)[1]) for line in lines if "spearman_cosine" in line]
    mean = [float(line.rsplit(": ", 1)[1]) for line in lines if "mean of the --eval splits" in line]
    assert len(scores) == 2 and mean and abs(mean[0] - sum(scores) / 2) <= 1e-4
