"""No sentence that a results table scores reaches a distillation sample."""

from __future__ import annotations

import pytest

from kalbert.data import data_path, load_parallel, load_sts
from kalbert.data.heldout import drop_heldout, heldout_splits
from kalbert.errors import KalbertError
from kalbert.teachers.corpus import sample_sentences


@pytest.fixture
def korsts_test():
    try:
        data_path("korsts", "test")
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")
    return load_sts("korsts", "test")


def test_reported_and_picking_splits_are_held_out():
    splits = set(heldout_splits())
    assert {("korsts", "test"), ("korsts", "dev"), ("klue-sts", "dev"), ("stsb-zh", "test"), ("cnsd-stsb", "test"),
            ("lcqmc", "test"), ("parallel-xnli-test", "all")} <= splits
    assert not {("korsts", "train"), ("afqmc", "train"), ("parallel-stsb-train", "all")} & splits


def test_a_test_sentence_in_a_corpus_is_left_out_of_the_sample(tmp_path, korsts_test):
    leaked = korsts_test[0].sentence1
    corpus = tmp_path / "corpus.txt"
    filler = [f"이것은 평범한 말뭉치 문장 {i}번으로 시험에 나오지 않는다." for i in range(30)]
    corpus.write_text("\n\n".join([leaked, *filler]) + "\n", encoding="utf-8")
    sample = sample_sentences([str(corpus)], max_sentences=100, progress=False)
    assert leaked not in sample.all() and len(sample.all()) == 30
    assert sample.heldout_dropped == 1


def test_drop_heldout_counts_translations_of_the_xnli_test(korsts_test):
    xnli = load_parallel("parallel-xnli-test").rows[0]
    kept, dropped = drop_heldout([xnli[1], "전혀 다른 새 문장이다.", korsts_test[5].sentence2])
    assert kept == ["전혀 다른 새 문장이다."] and dropped == 2
