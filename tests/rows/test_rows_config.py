"""One ``rows`` config in every verb that trains on rows: the same flags and keys (flat, as recipes write them, or
nested), rendered as the flags they always were, and records from before it still read."""

from __future__ import annotations

import json
import shlex

import pytest

from kalbert.cli.common import config_from_args
from kalbert.cli.main import build_parser
from kalbert.config import flatten_values, read_config_file, settings
from kalbert.errors import KalbertError
from kalbert.rows.config import RowsConfig
from kalbert.sentence.config import DistillConfig, SentenceTrainConfig
from kalbert.static.config import StaticTrainConfig
from kalbert.verbs import command_for

ROWS = {"pair_loss", "negative_miner", "negative_margin", "score_teacher", "score_temperature", "corpus_rows", "repeat"}


@pytest.mark.parametrize("cls", [SentenceTrainConfig, StaticTrainConfig])
def test_both_verbs_read_the_rows_settings_from_one_nested_config(cls):
    nested = {s.name: s.path for s in settings(cls) if s.path[0] == "rows"}
    assert set(nested) == ROWS and all(path == ("rows", name) for name, path in nested.items())


def test_each_verb_keeps_its_own_default_pair_loss():
    assert SentenceTrainConfig(model="m", out="o").rows.pair_loss == "mnrl"
    assert StaticTrainConfig(init="i", out="o").rows == RowsConfig(pair_loss="graded")


@pytest.mark.parametrize(("cls", "words"), [(SentenceTrainConfig, ["sbert", "train", "--model", "m"]),
                                            (StaticTrainConfig, ["static", "train", "--init", "i"])])
def test_rows_settings_are_the_flags_they_were_and_parse_back(cls, words):
    argv = [*words, "--out", "o", "--negative-miner", "multilingual-e5-small", "--negative-margin", "0.95",
            "--score-teacher", "e5-folder", "--corpus-rows", "500", "--repeat", "answers-ko=3", "korsts=2"]
    config = config_from_args(build_parser(argv).parse_args(argv))
    default = cls(words[-1], "o").rows
    assert config.rows == RowsConfig(pair_loss=default.pair_loss, negative_miner="multilingual-e5-small",
                                     negative_margin=0.95, score_teacher="e5-folder", corpus_rows=500,
                                     repeat=["answers-ko=3", "korsts=2"])
    command = command_for(config)
    assert "--negative-miner multilingual-e5-small --negative-margin 0.95 --score-teacher e5-folder" in command
    again = shlex.split(command)[1:]
    assert config_from_args(build_parser(again).parse_args(again)) == config


def test_flat_and_nested_keys_read_alike():
    flat = flatten_values(SentenceTrainConfig, {"negative_miner": "t", "pair_loss": "graded"}, "recipe")
    nested = flatten_values(SentenceTrainConfig, {"rows": {"negative_miner": "t", "pair_loss": "graded"}}, "file")
    assert flat == nested == {"negative_miner": "t", "pair_loss": "graded"}
    with pytest.raises(KalbertError, match="unknown setting rows.negative_minor"):
        flatten_values(SentenceTrainConfig, {"rows": {"negative_minor": "t"}}, "file")


def test_records_from_before_still_rerun(tmp_path):
    record = tmp_path / "kalbert.json"
    record.write_text(json.dumps({"kind": "sentence-model", "kalbert_version": "0", "stages": [
        {"stage": "sts", "config": {"model": "m", "out": "o", "negative_miner": "t", "corpus_rows": "inverse-cloze"}},
        {"stage": "distill", "config": {"student": "s", "out": "o", "student_layers": None}}]}), encoding="utf-8")
    assert read_config_file(record, SentenceTrainConfig, "sts") == {"model": "m", "out": "o", "negative_miner": "t"}
    assert read_config_file(record, DistillConfig, "distill") == {"student": "s", "out": "o"}
