"""`kalbert data build` and `kalbert pretrain` from the command line, including one-line errors."""

from __future__ import annotations

from transformers import AutoModel

from kalbert.cli.main import main


def test_cli_builds_data_trains_and_resumes(tmp_path, ko_corpus, ko_vocab, capsys):
    data, run = tmp_path / "data", tmp_path / "run"
    assert main(["data", "build", "--vocab", str(ko_vocab), "--inputs", str(ko_corpus), "--out", str(data),
                 "--max-seq-length", "48", "--max-documents", "150", "--heldout-fraction", "0.05",
                 "--processes", "1"]) == 0
    assert "instances" in capsys.readouterr().out
    args = ["pretrain", "--data", str(data), "--out", str(run), "--max-steps", "2", "--batch-size", "4",
            "--embedding-size", "16", "--hidden-size", "32", "--num-layers", "2", "--num-heads", "2",
            "--intermediate-size", "64", "--eval-every", "2", "--eval-instances", "8", "--no-tensorboard"]
    assert main(args) == 0
    assert AutoModel.from_pretrained(run / "model").config.hidden_size == 32
    assert main(args) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert main([*args, "--resume"]) == 0


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["pretrain", "--data", str(tmp_path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kalbert: error:") and "kalbert data build" in err and "\n" not in err
    assert main(["pretrain", "--list-presets"]) == 0
    assert "large" in capsys.readouterr().out
