"""Training splits are read through a folder's record and its parents' records."""

from __future__ import annotations

import json

import pytest

from kalbert import lineage
from kalbert.errors import KalbertError
from kalbert.lineage import refuse_trained_on, training_splits


def _folder(path, stages):
    path.mkdir()
    (path / "kalbert.json").write_text(json.dumps({"kind": "sentence-model", "stages": stages}), encoding="utf-8")
    return path


def test_splits_come_from_the_folder_and_the_teacher_it_was_distilled_from(tmp_path):
    teacher = _folder(tmp_path / "teacher", [{"stage": "sts", "config": {"train": ["korsts", "ocnli:train",
                                                                                    "kornli:dev"]}}])
    student = _folder(tmp_path / "student", [
        {"stage": "distill", "config": {"teacher": str(teacher), "parallel": ["parallel-stsb-train"]}},
        {"stage": "sts", "config": {"model": str(tmp_path / "student"), "train": ["stsb-zh"]}},
    ])
    assert training_splits(student) == {"korsts:train", "ocnli:train", "kornli:dev", "parallel-stsb-train:all",
                                        "stsb-zh:train"}


def test_an_evaluation_the_lineage_trained_on_is_refused_naming_the_split(tmp_path):
    teacher = _folder(tmp_path / "teacher", [{"stage": "sts", "config": {"train": ["kornli:dev"]}}])
    student = _folder(tmp_path / "student", [{"stage": "distill", "config": {"teacher": str(teacher)}}])
    refuse_trained_on(student, ["korsts:test", "kornli:test"], "--test")
    with pytest.raises(KalbertError, match="kornli:dev"):
        refuse_trained_on(student, ["korsts:dev", "kornli:dev"], "--eval")


def test_plain_folders_and_hub_names_have_no_recorded_training(tmp_path):
    assert training_splits(tmp_path) == set()
    assert training_splits("multilingual-e5-small") == set()


def test_each_record_is_read_once_however_many_paths_lead_to_it(tmp_path, monkeypatch):
    # a chain of averages, each naming the previous two models: 2^30 paths to the first one if walked per path
    folders = [_folder(tmp_path / "m0", [{"stage": "sts", "config": {"train": ["korsts"]}}]),
               _folder(tmp_path / "m1", [{"stage": "sts", "config": {"train": ["stsb-zh"]}}])]
    for i in range(2, 32):
        folders.append(_folder(tmp_path / f"m{i}", [{"stage": "average", "config": {
            "models": [str(folders[-1]), str(folders[-2])]}}]))
    reads = []
    real_read_meta = lineage.read_meta

    def counted_read_meta(folder):
        reads.append(folder)
        assert len(reads) <= len(folders), f"records read again: {len(reads)} reads of {len(folders)} folders"
        return real_read_meta(folder)

    monkeypatch.setattr(lineage, "read_meta", counted_read_meta)
    assert training_splits(folders[-1]) == {"korsts:train", "stsb-zh:train"}
    assert len(reads) == len(folders)
