"""Training rows come from train splits alone, and negatives are never the question's own passage or answer."""

from __future__ import annotations

import random

import pytest

from kalbert.data import load_answers, load_qa
from kalbert.errors import KalbertError
from kalbert.rerank.evaluate import eval_ref
from kalbert.rerank.rows import build_train_set, draw_negatives, load_questions, train_ref


def test_qa_rows_never_read_a_val_or_test_article(rerank_data):
    held_out = {e.context for split in ("val", "test") for e in load_qa("korquad", split)}
    train = {e.context for e in load_qa("korquad", "train")}
    rows = build_train_set("korquad", 3, None, 30, 0.99, None, seed=1)
    assert rows.ref == "korquad:train" and len(rows.rows) == len(load_qa("korquad", "train"))
    for row in rows.rows:
        passages = {row.positive, *row.negatives}
        assert passages <= train and not passages & held_out
        assert row.positive not in row.negatives and len(set(row.negatives)) == 3


def test_answer_rows_never_read_a_dev_or_test_question(rerank_data):
    held_out = {p.question for split in ("dev", "test") for p in load_answers("answers-ko", split)}
    held_out_answers = {p.answer for split in ("dev", "test") for p in load_answers("answers-ko", split)}
    rows = build_train_set("answers-ko:train", 3, None, 30, 0.99, None, seed=1)
    assert rows.rows and not {row.query for row in rows.rows} & held_out
    assert not {text for row in rows.rows for text in (row.positive, *row.negatives)} & held_out_answers


def test_another_answer_to_the_same_question_is_never_a_negative(rerank_data):
    questions = load_questions("answers-ko")
    twice = [i for i, own in enumerate(questions.own) if len(own) > 1]
    if not twice:
        pytest.skip("the question with two answers fell outside the train carve")
    rows = build_train_set("answers-ko", len(questions.pool) - 2, None, 30, 0.99, None, seed=1)
    own = {questions.pool[i] for i in questions.own[twice[0]]}
    for row in rows.rows:
        if row.query == questions.queries[twice[0]]:
            assert not own & set(row.negatives)


def test_draw_negatives_tops_up_from_the_pool_outside_the_own_passages():
    picked, topped = draw_negatives([[5, 6], [6, 7]], frozenset({0, 1}), 5, 9, random.Random(0))
    assert topped and len(set(picked)) == 5 and {5, 6, 7} <= set(picked) and not {0, 1} & set(picked)
    picked, topped = draw_negatives([[5, 6, 7]], frozenset({0}), 2, 9, random.Random(0))
    assert not topped and set(picked) <= {5, 6, 7}


def test_max_rows_is_a_seeded_sample(rerank_data):
    first = build_train_set("answers-ko", 2, None, 10, 0.99, 5, seed=3)
    again = build_train_set("answers-ko", 2, None, 10, 0.99, 5, seed=3)
    assert len(first.rows) == 5 and first.rows == again.rows and first.questions > 5


@pytest.mark.parametrize(("ref", "says"), [
    ("korquad:val", "not a train split"), ("answers-ko:test", "not a train split"), ("korsts", "sts data set"),
])
def test_training_takes_train_splits_of_qa_and_answer_sets_only(ref, says):
    with pytest.raises(KalbertError, match=says):
        train_ref(ref)


@pytest.mark.parametrize(("ref", "says"), [
    ("korquad:test", "reported split"), ("answers-ko:test", "reported split"), ("korquad:train", "training data"),
    ("korquad", "name the split"), ("korsts:dev", "sts data set"),
])
def test_selection_takes_val_and_dev_splits_only(ref, says):
    with pytest.raises(KalbertError, match=says):
        eval_ref(ref)


def test_too_few_passages_for_the_negatives_is_one_line(rerank_data):
    with pytest.raises(KalbertError, match="too few for 50 negatives"):
        build_train_set("korquad", 50, None, 30, 0.99, None, seed=1)


def test_a_dense_miner_and_first_stage_read_the_same_splits(rerank_data, tiny_dense):
    from kalbert.rerank.evaluate import load_eval_set

    held_out = {e.context for split in ("val", "test") for e in load_qa("korquad", split)}
    rows = build_train_set("korquad", 3, str(tiny_dense), 5, 0.99, None, seed=1)
    assert rows.miners == ["bm25", str(tiny_dense)]
    assert not {text for row in rows.rows for text in row.negatives} & held_out
    evaluation = load_eval_set("answers-ko:dev", str(tiny_dense), 5, None, seed=1)
    assert evaluation.ranking.shape == (len(evaluation.queries), len(evaluation.corpus))
    assert not {e.context for e in load_qa("korquad", "test")} & set(
        load_eval_set("korquad:val", "bm25", 5, None, seed=1).corpus)


def test_article_negatives_are_other_paragraphs_of_the_questions_own_article(rerank_data):
    examples = load_qa("korquad", "train")
    article = {e.context: e.title for e in examples}
    rows = build_train_set("korquad", 3, None, 30, 0.99, None, seed=1, article_negatives=2)
    by_question = {e.question: e for e in examples}
    siblings_taken = 0
    for row in rows.rows:
        title = by_question[row.query].title
        in_article = [text for text in row.negatives if article[text] == title]
        wanted = min(2, len({e.context for e in examples if e.title == title}) - 1)
        assert len(in_article) >= wanted and row.positive not in row.negatives and len(set(row.negatives)) == 3
        siblings_taken += wanted
    assert rows.from_article == siblings_taken > 0
    assert rows.record()["negatives_from_article"] == siblings_taken


def test_no_article_negatives_leaves_the_rows_as_they_were(rerank_data):
    assert build_train_set("korquad", 3, None, 30, 0.99, None, seed=1, article_negatives=0).rows == \
        build_train_set("korquad", 3, None, 30, 0.99, None, seed=1).rows
    answers = build_train_set("answers-ko", 2, None, 10, 0.99, None, seed=1, article_negatives=2)
    assert answers.from_article == 0


def test_draw_negatives_keeps_what_was_drawn_first():
    picked, topped = draw_negatives([[5, 6, 7]], frozenset({0}), 3, 9, random.Random(0), first=[2, 6])
    assert not topped and picked[:2] == [2, 6] and len(set(picked)) == 3 and set(picked) <= {2, 5, 6, 7}
