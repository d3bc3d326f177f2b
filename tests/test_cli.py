"""The command line: help with examples, one-line errors with exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kalbert.cli.main import build_parser, main


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kalbert", *args], capture_output=True, text=True, env=env)


def test_every_verb_help_has_an_example(capsys):
    for argv in (["vocab", "build"], ["vocab", "extend"], ["vocab", "inspect"], ["data", "list"]):
        with pytest.raises(SystemExit) as exited:
            main([*argv, "--help"])
        assert exited.value.code == 0
        assert "example:\n  kalbert " in capsys.readouterr().out


def test_user_error_is_one_line_with_exit_code_2(tmp_path, monkeypatch):
    result = _run("vocab", "build", "--lang", "ko", "--inputs", str(tmp_path / "nope.txt"),
                  "--out", str(tmp_path / "o"))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert result.stderr.startswith("kalbert: error:") and "nope.txt" in result.stderr
    assert not (tmp_path / "o").exists()


def test_debug_shows_traceback(tmp_path):
    import os

    env = {**os.environ, "KALBERT_DEBUG": "1"}
    result = _run("vocab", "inspect", str(tmp_path), env=env)
    assert result.returncode == 2
    assert "Traceback" in result.stderr


def test_unknown_data_set_lists_known_ones(ko_vocab, capsys):
    assert main(["vocab", "inspect", str(ko_vocab), "--eval", "korsst:dev"]) == 2
    err = capsys.readouterr().err
    assert "unknown data set 'korsst'" in err and "did you mean 'korsts'" in err


def test_inspect_prints_pieces_and_stats(ko_vocab, capsys):
    argv = ["vocab", "inspect", str(ko_vocab), "배우들의 연기도", "--eval", "korsts:dev", "--max-rows", "200"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "pieces:" in out and "korsts:dev: 200 sentences" in out


def test_inspect_reads_plain_text_files(ko_vocab, tmp_path, capsys):
    sentences = tmp_path / "eval.txt"
    sentences.write_text("배우들의 연기도 좋았다.\n영화가 재미있었다.\n", encoding="utf-8")
    assert main(["vocab", "inspect", str(ko_vocab), "--eval", str(sentences), "--json"]) == 0
    assert '"sentences": 2' in capsys.readouterr().out


def test_zero_is_taken_only_where_a_setting_says_what_it_means(capsys):
    parser = build_parser(["teacher", "export"])
    args = parser.parse_args(["teacher", "export", "--check-sentences", "0"])  # "(0: no check)"
    assert args.check_sentences == 0
    for argv in (["teacher", "export", "--check-sentences", "-1"], ["mc", "train", "--batch-size", "0"]):
        with pytest.raises(SystemExit) as exited:
            build_parser(argv).parse_args(argv)
        assert exited.value.code == 2
        assert "positive integer, got" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "says"), [
    (["serach"], "kalbert: error: unknown noun 'serach', did you mean 'search'?"),
    (["search", "biuld"], "kalbert search: error: unknown verb 'biuld', did you mean 'build'?"),
    (["sbert", "trian", "--model", "x"], "kalbert sbert: error: unknown verb 'trian', did you mean 'train'?"),
    (["xyzzy"], "kalbert: error: unknown noun 'xyzzy'; choose a noun: vocab, data,"),
])
def test_a_mistyped_noun_or_verb_is_one_line_with_the_nearest(argv, says, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(says), err
