"""The rows layer: each kind of training reference becomes its typed rows (graded pairs; NLI, paraphrase,
question -> passage and translation rows with their prompt roles), caps and teacher scores apply, and evaluation
splits, splits the run evaluates and teachers trained on them are refused before any row is read."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kalbert.data import data_path, load_sts
from kalbert.errors import KalbertError
from kalbert.rows.build import check_rows, training_rows
from kalbert.rows.config import RowsConfig
from kalbert.rows.references import FILE, ROW_KINDS, resolve_refs, trains_as
from kalbert.rows.sets import GradedPairs, RankedRows
from kalbert.text.sentences import split_sentences

STATIC_KINDS = (*ROW_KINDS, "parallel")


def rows_of(refs: list[str], limit: int | None = None, kinds: tuple[str, ...] = ROW_KINDS, languages=(), **settings):
    """The row sets of ``refs`` (``settings``: RowsConfig fields)."""
    return training_rows(resolve_refs(refs, kinds, "--train", []), RowsConfig(**settings), limit, languages).sets


def test_an_sts_set_gives_graded_pairs_scored_in_0_1(tiny_data):
    (korsts,) = rows_of(["korsts"])
    gold = load_sts("korsts", "train")
    assert isinstance(korsts, GradedPairs) and korsts.label == "korsts:train" and len(korsts) == len(gold)
    assert korsts.left[0] == gold[0].sentence1 and korsts.scores[0] == pytest.approx(gold[0].score / 5)
    assert 0 <= korsts.scores.min() and korsts.scores.max() <= 1


def test_a_graded_pair_file_gives_graded_pairs_unless_it_holds_an_evaluation_sentence(tiny_data, tmp_path):
    mined = tmp_path / "mined.tsv"
    mined.write_text("sentence1\tsentence2\tscore\n영화가 좋았다\t배우가 웃었다\t4\n", encoding="utf-8")
    ((ref,),) = [resolve_refs([str(mined)], ROW_KINDS, "--train", [])]
    assert (ref.split, ref.kind, ref.label) == (FILE, "sts", str(mined))
    (pairs,) = rows_of([str(mined)])
    assert isinstance(pairs, GradedPairs) and pairs.scores.tolist() == [pytest.approx(0.8)]
    dev = load_sts("korsts", "dev")[0]
    mined.write_text(f"sentence1\tsentence2\tscore\n{dev.sentence1}\t{dev.sentence2}\t3\n", encoding="utf-8")
    with pytest.raises(KalbertError, match="sentences that evaluation splits score"):
        rows_of([str(mined)])


def test_nli_premises_get_their_contradiction_as_hard_negative(tiny_data):
    (nli,) = rows_of(["kornli:dev"])
    assert isinstance(nli, RankedRows) and nli.roles == () and len(nli) > 0
    with_negative = [i for i, n in enumerate(nli.negatives) if n is not None]
    assert with_negative and all(nli.negatives[i] != nli.positives[i] for i in with_negative)


def test_paraphrase_sets_train_ranked_or_graded_as_pair_loss_says(tiny_data):
    (ranked,) = rows_of(["afqmc"])
    (graded,) = rows_of(["afqmc"], pair_loss="graded")
    assert isinstance(ranked, RankedRows) and ranked.negatives == [None] * len(ranked)
    assert isinstance(graded, GradedPairs) and set(graded.scores.tolist()) == {0.0, 1.0} and len(graded) > len(ranked)


def test_boolq_trains_as_a_pair_set_not_as_question_passage_rows(tiny_boolq_rows):
    assert trains_as("kobest-boolq") == "pairs"
    (boolq,) = rows_of(["kobest-boolq"])
    yes = [(passage, question) for _, passage, question, answer in tiny_boolq_rows if answer == "True"]
    assert boolq.roles == () and list(zip(boolq.anchors, boolq.positives, strict=True)) == yes


def test_qa_questions_find_their_paragraph_with_the_next_one_as_negative(tiny_qa_data):
    (qa,) = rows_of(["korquad"])
    assert qa.label == "korquad:train" and qa.roles == ("query", "document", "document") and len(qa) == 14
    assert all(q.endswith("?") and n is not None and n != p for q, p, n in zip(qa.anchors, qa.positives, qa.negatives,
                                                                                strict=True))


def test_question_answer_sets_give_each_question_against_its_answer(tiny_answers):
    assert trains_as("answers-ko") == trains_as("answers-zh") == "qa"
    (answers,) = rows_of(["answers-ko"])
    own = dict(tiny_answers)
    assert answers.label == "answers-ko:train" and answers.roles == ("query", "document", "document")
    assert 0 < len(answers) < len(tiny_answers)  # the train carve only
    assert all(own[q] == a for q, a in zip(answers.anchors, answers.positives, strict=True))
    assert answers.negatives == [None] * len(answers)  # a miner adds them


def test_a_corpus_gives_sentences_against_the_rest_of_their_paragraph(tiny_corpus):
    (corpus,) = rows_of(["kowiki"])
    assert corpus.label == "kowiki:all" and corpus.roles[:2] == ("query", "document") and len(corpus) == 2
    long_paragraphs = {tiny_corpus[0][0], tiny_corpus[1][0]}  # the three-sentence ones
    for query, passage in zip(corpus.anchors, corpus.positives, strict=True):
        assert query not in passage
        assert {p for p in long_paragraphs if query in p and all(s in p for s in split_sentences(passage))}
    assert len(rows_of(["kowiki"], corpus_rows=1)[0]) == len(rows_of(["kowiki"], limit=1)[0]) == 1


def test_inverse_cloze_rows_read_the_corpus_once(tiny_corpus, tmp_path, monkeypatch):
    from kalbert.rows.inverse_cloze import inverse_cloze_rows
    from kalbert.teachers import corpus

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    reads = []
    sample = corpus.sample_sentences
    monkeypatch.setattr(corpus, "sample_sentences", lambda *a, **k: reads.append(a) or sample(*a, **k))
    first = inverse_cloze_rows("kowiki")
    assert inverse_cloze_rows("kowiki") == first and len(reads) == 1


def test_parallel_sets_pair_the_model_languages_where_a_verb_takes_them():
    try:
        data_path("parallel-stsb-train")
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")
    (parallel,) = rows_of(["parallel-stsb-train"], kinds=STATIC_KINDS, languages=["ko", "zh"])
    assert parallel.label == "parallel-stsb-train" and len(parallel) > 10_000
    hangul = [any("\uac00" <= c <= "\ud7a3" for c in text) for text in (parallel.anchors[0], parallel.positives[0])]
    assert hangul == [True, False] and parallel.negatives == [None] * len(parallel)
    with pytest.raises(KalbertError, match="this static model reads ko"):
        rows_of(["parallel-stsb-train"], kinds=STATIC_KINDS, languages=["ko"])
    with pytest.raises(KalbertError, match="parallel data set; --train takes"):
        resolve_refs(["parallel-stsb-train"], ROW_KINDS, "--train", [])


def test_a_limit_keeps_the_first_rows_of_each_column_layout(tiny_data):
    (graded,) = rows_of(["korsts"], limit=5)
    assert len(graded) == 5
    (nli,) = rows_of(["kornli:dev"])
    (capped,) = rows_of(["kornli:dev"], limit=2)
    for has_negative in (True, False):
        first = [a for a, n in zip(nli.anchors, nli.negatives, strict=True) if (n is not None) == has_negative][:2]
        assert [a for a, n in zip(capped.anchors, capped.negatives, strict=True)
                if (n is not None) == has_negative] == first


def test_a_repeated_set_holds_its_kept_rows_that_many_times(tiny_data):
    graded, nli = rows_of(["korsts", "kornli:dev"], limit=3, repeat=["korsts=2"])
    (once,) = rows_of(["korsts"], limit=3)
    assert graded.left == once.left * 2 and graded.right == once.right * 2
    assert np.array_equal(graded.scores, np.tile(once.scores, 2))
    assert len(nli) == len(rows_of(["kornli:dev"], limit=3)[0])  # a set not named keeps its rows


def test_repeated_ranked_rows_keep_their_teacher_vectors_beside_them():
    ref = resolve_refs(["korquad"], ROW_KINDS, "--train", [])[0]
    vectors = [np.eye(2, dtype=np.float32) * k for k in (1, 2, 3)]
    rows = RankedRows(ref, ["q1", "q2"], ["p1", "p2"], ["n1", None], ("query", "document", "document"), vectors)
    twice = rows.repeated(2)
    assert twice.anchors == ["q1", "q2", "q1", "q2"] and twice.negatives == ["n1", None, "n1", None]
    assert all(np.array_equal(v, np.vstack([w, w])) for v, w in zip(twice.teacher, vectors, strict=True))


@pytest.mark.parametrize(("entry", "message"), [
    ("korsts", "expected SET=N"),
    ("korsts=0", "expected SET=N"),
    ("korsts=two", "expected SET=N"),
    ("stsb-zh=2", "stsb-zh is not among the training sets \\(korsts:train\\)"),
    ("korsts:dev=2", "not among the training sets"),
])
def test_a_repeat_that_names_no_training_set_is_refused_before_any_row_is_read(entry, message, monkeypatch):
    monkeypatch.setattr("kalbert.rows.build._rows", lambda *a: pytest.fail("rows were read"))
    with pytest.raises(KalbertError, match=message):
        rows_of(["korsts"], repeat=[entry])


@pytest.mark.parametrize(("refs", "evaluated", "message"), [
    (["korsts:test"], [], "evaluation split"),
    (["korquad:test"], [], "evaluation split"),
    (["answers-ko:test"], [], "evaluation split"),
    (["parallel-xnli-test"], [], "evaluation split"),
    (["korsts:dev"], ["korsts:dev"], "both training and evaluation"),
    (["kobest-copa"], [], "mc data set"),
    (["kornli"], [], "no train split"),
])
def test_evaluation_splits_are_refused_before_any_row_is_read(refs, evaluated, message):
    with pytest.raises(KalbertError, match=message):
        resolve_refs(refs, STATIC_KINDS, "--train", evaluated)


def test_a_teacher_trained_on_an_evaluated_split_is_refused(tmp_path):
    teacher = tmp_path / "teacher"
    teacher.mkdir()
    (teacher / "kalbert.json").write_text(json.dumps({"stages": [{"stage": "sts", "config": {
        "train": ["korsts:dev"]}}]}), encoding="utf-8")
    for settings in ({"negative_miner": str(teacher)}, {"score_teacher": str(teacher)}):
        with pytest.raises(KalbertError, match="which --eval evaluates"):
            check_rows([], RowsConfig(**settings), ["korsts:dev"], "--eval")
    check_rows([], RowsConfig(negative_miner=str(teacher)), ["stsb-zh:dev"], "--eval")  # no overlap: no error


def test_a_score_teacher_labels_the_question_passage_rows_it_keeps(tiny_encoder, tiny_qa_data):
    (qa,) = rows_of(["korquad"], limit=4, score_teacher=str(tiny_encoder))
    anchors, positives, negatives = qa.teacher
    assert anchors.shape == positives.shape == negatives.shape and anchors.shape[0] == len(qa) == 4
    has_negative = np.array([n is not None for n in qa.negatives])
    assert np.allclose(np.linalg.norm(negatives[has_negative], axis=1), 1, atol=1e-2)
    assert not negatives[~has_negative].any()
