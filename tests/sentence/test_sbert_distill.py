"""Distillation: student(source) and student(translation) regress onto cached teacher(source); a
projection bridges widths; teachers that cannot read the parallel columns are refused."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from kalbert.errors import KalbertError
from kalbert.sentence import load_sentence_model
from kalbert.sentence.distill import DistillConfig, distill_student, teacher_embeddings
from kalbert.sentence.loop import LoopConfig

QUICK = LoopConfig(lr=1e-3, batch_size=32, max_steps=4, eval_steps=2)


def test_distill_with_tiny_teacher_projects_and_caches(tiny_sbert, tiny_teacher, tiny_data, tmp_path):
    config = DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), parallel=["tatoeba-en-ko"],
                           out=str(tmp_path / "kd"), dev_rows=50, cache_dir=str(tmp_path / "cache"), loop=QUICK)
    result = distill_student(config)
    student = load_sentence_model(result.out)
    assert student.get_embedding_dimension() == 24  # 32-wide ALBERT + Dense to the teacher's 24
    assert {"en-ko_negative_mse", "en-ko_mean_accuracy"} <= set(result.metrics)
    meta = json.loads((result.out / "kalbert.json").read_text())
    assert meta["teacher"]["source_lang"] == "en" and meta["languages"] == ["ko"]
    assert len(list((tmp_path / "cache").glob("*.npy"))) == 1


class CountingTeacher:
    def __init__(self) -> None:
        self.calls = 0

    def encode(self, sentences, **kwargs):
        self.calls += 1
        return np.arange(len(sentences) * 3, dtype=np.float32).reshape(len(sentences), 3)


def test_teacher_embeddings_are_computed_once(tiny_teacher, tmp_path):
    teacher, sentences = CountingTeacher(), ["A plane is taking off.", "A man is playing a guitar."]
    first = teacher_embeddings(teacher, tiny_teacher, sentences, 8, tmp_path)
    again = teacher_embeddings(teacher, tiny_teacher, sentences, 8, tmp_path)
    np.testing.assert_array_equal(first, again)
    assert teacher.calls == 1 and first.shape == (2, 3)
    teacher_embeddings(teacher, tiny_teacher, sentences[:1], 8, tmp_path)
    assert teacher.calls == 2  # other sentences, other cache entry


def test_real_minilm_teacher(tiny_sbert, tiny_data, tmp_path):
    started = time.perf_counter()
    config = DistillConfig(student=str(tiny_sbert), parallel=["tatoeba-en-ko"], out=str(tmp_path / "kd"),
                           dev_rows=50, max_rows=150, cache_dir=str(tmp_path / "cache"), loop=QUICK)
    result = distill_student(config)
    assert load_sentence_model(result.out).get_embedding_dimension() == 384
    assert time.perf_counter() - started < 60


def _tsv(path, header, rows):
    path.write_text("\t".join(header) + "\n" + "".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


ROWS = [("Hello there.", "안녕하세요."), ("I like tea.", "나는 차를 좋아한다."), ("It is raining.", "비가 온다.")]


def test_teacher_language_must_match_the_parallel_columns(tiny_sbert, tiny_teacher, tmp_path):
    no_english = _tsv(tmp_path / "ko-zh.tsv", ["ko", "zh"], [("안녕하세요.", "你好。")] * 3)
    with pytest.raises(KalbertError, match="no 'en' column for the en teacher"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), parallel=[no_english],
                              out=str(tmp_path / "a")))
    with pytest.raises(KalbertError, match="teacher is a en model but the source column is 'ko'"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), source_lang="ko",
                              parallel=[_tsv(tmp_path / "ok.tsv", ["en", "ko"], ROWS)], out=str(tmp_path / "b")))
    swapped = _tsv(tmp_path / "swapped.tsv", ["en", "ko"], [(ko, en) for en, ko in ROWS])
    with pytest.raises(KalbertError, match="column 'en' of .* looks like 'ko'"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), parallel=[swapped],
                              out=str(tmp_path / "c")))


def test_bad_parallel_sources(tiny_sbert, tiny_teacher, tiny_data, tmp_path):
    for source, message in [("parallel-xnli-test", "evaluation split"), ("korsts", "not parallel"),
                            (str(tmp_path / "missing.tsv"), "not found"),
                            (_tsv(tmp_path / "empty.tsv", [], []), "empty|no rows")]:
        with pytest.raises(KalbertError, match=message):
            distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tiny_teacher), parallel=[source],
                                  out=str(tmp_path / "x")))
    with pytest.raises(KalbertError, match="not a SentenceTransformer folder"):
        distill_student(DistillConfig(student=str(tiny_sbert), teacher=str(tmp_path), parallel=["tatoeba-en-ko"],
                              out=str(tmp_path / "x")))
