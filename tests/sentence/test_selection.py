"""Selection on dev only: every flag that picks a checkpoint, a learning rate, a soup member or a stage refuses
each split the kit reports (all test splits, KLUE-STS dev), in one line that names the split."""

from __future__ import annotations

import pytest

from kalbert.cli.main import main
from kalbert.data.registry import DATASETS, assert_selectable
from kalbert.errors import KalbertError
from kalbert.static.evaluate import eval_refs
from kalbert.tasks.configs import MC_TASKS, QA_TASKS

REPORTED = [f"{name}:{split}" for name, spec in DATASETS.items() for split in sorted(spec.eval_splits)]


@pytest.mark.parametrize("ref", REPORTED)
def test_every_reported_split_is_refused_for_selection(ref):
    name, split = ref.split(":")
    with pytest.raises(KalbertError, match=f"{ref} is a reported split"):
        assert_selectable(name, split)


@pytest.mark.parametrize("ref", ["korsts:dev", "stsb-zh:dev", "cnsd-stsb:dev", "stsb-ko-zh:dev", "korquad:val"])
def test_dev_splits_pick(ref):
    assert_selectable(*ref.split(":"))


@pytest.mark.parametrize("args", [
    ["sbert", "train", "--model", "{sbert}", "--train", "korsts", "--eval", "{ref}"],
    ["sbert", "train", "--model", "{sbert}", "--train", "korsts", "--eval", "korsts:dev", "{ref}"],
    ["teacher", "finetune", "--teacher", "{sbert}", "--eval", "{ref}"],
    ["sbert", "distill", "--teacher", "{sbert}", "--student", "{sbert}", "--corpus", "kowiki", "--eval", "{ref}"],
    ["sbert", "average", "--models", "{sbert}", "{sbert}", "--eval", "{ref}"],
    ["sbert", "export", "--model", "{albert}", "--eval", "{ref}"],
])
@pytest.mark.parametrize("ref", ["klue-sts:dev", "korsts:test"])
def test_eval_flags_refuse_reported_splits_in_one_line(tiny_sbert, tiny_albert, tmp_path, capsys, args, ref):
    command = [word.format(ref=ref, sbert=tiny_sbert, albert=tiny_albert) for word in args]
    assert main([*command, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{ref} is a reported split" in err
    assert not (tmp_path / "out").exists()


def test_static_eval_refuses_reported_splits():
    assert eval_refs(None, ["ko", "zh"]) == ["korsts:dev", "stsb-zh:dev"]
    with pytest.raises(KalbertError, match="stsb-zh:test is a reported split"):
        eval_refs(["stsb-zh:test"], ["zh"])


def test_task_selection_splits_are_never_reported():
    for name, splits in {**QA_TASKS, **MC_TASKS}.items():
        assert splits.select is None or splits.select not in DATASETS[name].eval_splits, name
