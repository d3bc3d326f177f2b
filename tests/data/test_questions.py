"""`kalbert data questions`: training-split questions as a corpus, never a question of a scored split."""

from __future__ import annotations

import pytest

from kalbert.cli.main import main
from kalbert.data import data_path, iter_documents, load_boolq, load_qa
from kalbert.data.questions import training_questions
from kalbert.errors import KalbertError


@pytest.fixture(autouse=True)
def _need_the_real_sets():
    for name, split in (("korquad", "train"), ("kobest-boolq", "train")):
        try:
            data_path(name, split)
        except KalbertError as exc:
            pytest.skip(f"shared data missing: {exc}")


def test_questions_come_from_train_parts_only():
    questions = training_questions(["korquad", "kobest-boolq"])
    train = {e.question.strip() for e in load_qa("korquad", "train")}
    train |= {e.question.strip() for e in load_boolq("kobest-boolq", "train")}
    assert set(questions) == train and len(questions) == len(set(questions))


@pytest.mark.parametrize(("ref", "says"), [("korquad:test", "evaluation split"), ("afqmc", "holds no questions"),
                                           ("korsts", "sts data set")])
def test_sets_without_trainable_questions_are_refused(ref, says):
    with pytest.raises(KalbertError, match=says):
        training_questions([ref])


def test_the_file_is_a_corpus_with_one_question_per_document(tmp_path, capsys):
    out = tmp_path / "questions.txt"
    assert main(["data", "questions", "--sets", "kobest-boolq", "--out", str(out)]) == 0
    documents = list(iter_documents([out]))
    assert [" ".join(d) for d in documents] == training_questions(["kobest-boolq"])
    assert "distinct questions" in capsys.readouterr().out
    assert main(["data", "questions", "--sets", "kobest-boolq", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
