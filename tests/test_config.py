"""Config dataclasses as the schema of every verb: help with examples, --config files, reproducing commands."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

import pytest

from kalbert.cli.common import config_from_args
from kalbert.cli.main import build_parser, main
from kalbert.config import CONFIGS_DIR, render_command
from kalbert.verbs import command_for

ROOT = Path(__file__).resolve().parents[1]


def _verbs() -> list[tuple[str, ...]]:
    """Every runnable command path: ("vocab", "build"), ..., ("transplant",)."""
    found = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers:
            found.append(path)
        for action in subparsers:
            for name, child in action.choices.items():
                if child.prog.rpartition(" ")[2] == name:  # not an old name (alias) of a verb
                    walk(child, (*path, name))

    walk(build_parser(), ())
    return found


def test_all_fourteen_verbs_are_found():
    assert len(_verbs()) >= 14


@pytest.mark.parametrize("verb", _verbs(), ids=" ".join)
def test_every_verb_help_has_a_working_example(verb, capsys):
    with pytest.raises(SystemExit) as exited:
        main([*verb, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "example" in out and "\n  kalbert " in out
    command = " ".join(("kalbert", *verb))
    example = next(line.strip() for line in out.rsplit("\nexample", 1)[1].splitlines()
                   if line.strip().startswith(command + " ") or line.strip() == command)
    args = build_parser().parse_args(shlex.split(example.rstrip("\\"))[1:])
    assert callable(args.func)


def _config_files() -> list[Path]:
    return sorted(CONFIGS_DIR.rglob("*.yaml"))


@pytest.mark.parametrize("path", _config_files(), ids=lambda p: str(p.relative_to(CONFIGS_DIR)))
def test_every_config_opens_with_the_command_that_runs_it(path):
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# kalbert ") and f"--config {path.relative_to(CONFIGS_DIR)}" in first
    args = build_parser().parse_args(shlex.split(first[2:])[1:])
    config = config_from_args(args)
    assert render_command(" ".join(shlex.split(first[2:])[:-2]), config).startswith("kalbert ")


def test_flags_override_the_config_file(tmp_path):
    args = build_parser().parse_args(["vocab", "build", "--config", "vocab/ko-32k.yaml", "--vocab-size", "8000",
                                      "--out", str(tmp_path / "v")])
    config = config_from_args(args)
    assert (config.lang, config.inputs, config.vocab_size, config.seed) == ("ko", ["kowiki", "nsmc"], 8000, 13)
    assert config.out == str(tmp_path / "v")


def test_unknown_keys_are_one_error_naming_them_all(tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_text("lang: ko\nlearning_rate: 1.0\nmax_length: 64\nout: x\ninputs: [nsmc]\n", encoding="utf-8")
    assert main(["vocab", "build", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "learning_rate, max_length" in err


def test_missing_required_settings_are_one_error(capsys):
    assert main(["sbert", "train", "--train", "korsts"]) == 2
    assert "missing --model, --out" in capsys.readouterr().err


def test_an_artifact_kalbert_json_reruns_what_made_it():
    args = build_parser().parse_args(["vocab", "build", "--config", str(ROOT / "vocab/ko-zh-48k/kalbert.json")])
    vocab = config_from_args(args)
    assert (vocab.lang, vocab.vocab_size, vocab.seed) == ("ko+zh", 48000, 13)
    folder = ROOT / "models/sbert-ko-zh-small"
    sts = config_from_args(build_parser().parse_args(["sbert", "train", "--config", str(folder)]))
    assert (sts.model, sts.loop.lr, sts.loop.eval_steps, sts.max_rows, sts.loop.seed) == (
        "outputs/s16/soup", 2e-5, 250, 6000, 42)
    assert sts.rows.pair_loss == "graded"
    distill = config_from_args(build_parser().parse_args(["sbert", "distill", "--config", str(folder)]))
    assert (distill.loss, distill.loop.max_steps, distill.max_sentences, distill.learn_source) == (
        "mse", None, 100000, True)


def test_rendered_command_parses_back_to_the_same_config():
    args = build_parser().parse_args(["sbert", "distill", "--config", str(ROOT / "models/sbert-ko-zh-small")])
    config = config_from_args(args)
    command = command_for(config)
    assert "--loss mse" in command and "--epochs 1.0" in command and "--batch-size 128" in command
    assert "--max-sentences 100000" in command and "--pooling" not in command  # set values render, defaults do not
    again = config_from_args(build_parser().parse_args(shlex.split(command)[1:]))
    assert again == config


def test_shipped_artifacts_record_their_kind():
    for folder in ["vocab/ko-32k", "vocab/zh-32k", "vocab/ko-zh-48k", "models/sbert-ko-zh-small",
                   "models/static-ko-zh-48k", "models/qa-ko-zh-small"]:
        meta = json.loads((ROOT / folder / "kalbert.json").read_text(encoding="utf-8"))
        assert meta["kind"] in ("vocab", "sentence-model", "static-model", "qa")
