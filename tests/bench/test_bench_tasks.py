"""Benchmark task registry: splits fixed to the published ones, selections, and the unknown-name error."""

from __future__ import annotations

import pytest

from kalbert.bench.tasks import TASKS, get_task, select_tasks
from kalbert.cli.main import main
from kalbert.data import get_spec
from kalbert.errors import KalbertError


def test_tasks_use_the_published_splits():
    splits = {name: task.split for name, task in TASKS.items()}
    assert splits == {
        "korsts": "test",
        "klue-sts": "dev",
        "stsb-zh": "test",
        "cnsd-stsb": "test",
        "stsb-ko-zh": "test",
        "lcqmc": "test",
        "pawsx-zh": "test",
        "afqmc": "dev",
        "xnli-ko-zh": "all",
        "xnli-ko-en": "all",
        "xnli-zh-en": "all",
        "korquad-retrieval": "test",
        "cmrc2018-retrieval": "test",
        "drcd-retrieval": "test",
        "answers-ko-retrieval": "test",
        "answers-zh-retrieval": "test",
        "kobest-copa": "test",
        "xcopa-zh": "test",
    }
    for task in TASKS.values():  # every task reads a registered split of the right kind
        spec = get_spec(task.dataset)
        assert task.split in spec.splits and task.split in spec.eval_splits
        if task.kind == "bitext":  # a language pair out of a parallel set's columns
            assert spec.kind == "parallel" and set(task.lang.split("-")) <= set(spec.lang.split("-"))
        elif task.kind == "retrieval":  # a QA or answer set's questions; fusion weight picked on another split
            assert spec.kind in ("qa", "answers") and spec.lang == task.lang
            assert task.select_split in spec.splits and task.select_split not in spec.eval_splits
        else:
            assert spec.kind == task.kind and spec.lang == task.lang


def test_metrics_per_kind():
    assert get_task("korsts").metrics == ("spearman", "pearson")
    assert get_task("afqmc").metrics == ("spearman", "accuracy")
    assert get_task("xcopa-zh").metrics == ("accuracy",)
    assert get_task("xnli-ko-zh").metrics == ("accuracy",)
    assert get_task("drcd-retrieval").metrics == ("ndcg_at_10", "mrr_at_10", "recall_at_1", "recall_at_10",
                                                  "recall_at_100")


def test_selections_keep_registry_order_and_deduplicate():
    assert [t.name for t in select_tasks("all")] == list(TASKS)
    assert [t.name for t in select_tasks("sts")] == ["korsts", "klue-sts", "stsb-zh", "cnsd-stsb", "stsb-ko-zh"]
    assert [t.name for t in select_tasks("afqmc, ko,korsts")] == [
        "korsts",
        "klue-sts",
        "afqmc",
        "korquad-retrieval",
        "answers-ko-retrieval",
        "kobest-copa",
    ]
    assert [t.name for t in select_tasks("retrieval")] == ["korquad-retrieval", "cmrc2018-retrieval", "drcd-retrieval",
                                                           "answers-ko-retrieval", "answers-zh-retrieval"]
    assert [t.name for t in select_tasks("bitext")] == ["xnli-ko-zh", "xnli-ko-en", "xnli-zh-en"]


def test_unknown_task_lists_the_known_ones():
    with pytest.raises(KalbertError) as info:
        select_tasks("korsts,kor-sts")
    assert "kor-sts" in str(info.value)
    assert all(name in str(info.value) for name in TASKS)
    with pytest.raises(KalbertError, match="no benchmark tasks"):
        select_tasks(" , ")


def test_cli_unknown_task_is_a_one_line_error(tmp_path, capsys):
    assert main(["bench", "run", "--model", "tfidf", "--tasks", "stsb", "--out", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown benchmark task 'stsb'" in err and "klue-sts" in err
    assert not (tmp_path / "r.json").exists()
