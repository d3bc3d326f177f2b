"""Sentence training: a few steps on tiny KorSTS produce a folder holding the best dev checkpoint and its
scores; each kind of row gets its loss (graded pairs CoSENT, NLI triplets and question -> passage rows in-batch
negatives with their prompts); `sbert sts` still runs, as the old name of `sbert train`."""

from __future__ import annotations

import json

import pytest

from kalbert.data import load_qa
from kalbert.errors import KalbertError
from kalbert.sentence import load_sentence_model
from kalbert.sentence.config import SentenceTrainConfig
from kalbert.sentence.evaluate import evaluate_sts, retrieval_evaluator
from kalbert.sentence.train import summary, train_sentence_model
from kalbert.training import LoopConfig


def test_training_keeps_the_best_checkpoint(tiny_sbert, tiny_data, tmp_path):
    loop = LoopConfig(lr=1e-3, batch_size=16, max_steps=6, eval_steps=2)
    config = SentenceTrainConfig(model=str(tiny_sbert), out=str(tmp_path / "sts"), train=["korsts", "kornli:dev"],
                                 test=["korsts:test"], loop=loop)
    result = train_sentence_model(config)
    assert [e.step for e in result.fit.history] == [0, 2, 4, 6]
    assert result.fit.best.score == max(e.score for e in result.fit.history[1:]) == result.dev
    reloaded = load_sentence_model(result.out)
    # the batch size of the evaluation that picked it: padding to another length moves fp32 scores a little
    assert evaluate_sts(reloaded, "korsts:dev", batch_size=16) == pytest.approx(result.dev, abs=1e-4)
    meta = json.loads((result.out / "kalbert.json").read_text())
    assert [s["stage"] for s in meta["stages"]] == ["export", "sts"]
    assert {m["data"] for m in meta["metrics"] if m["stage"] == "sts"} == {"korsts:dev", "korsts:test"}
    assert len(json.loads((result.out / "training_log.json").read_text())["history"]) == 4
    assert f"korsts:dev Spearman: {result.dev:.4f}" in summary(result) and "korsts:test Spearman" in summary(result)


@pytest.mark.parametrize(("train", "message"), [
    (["korsts:test"], "evaluation split"),
    (["korsts:dev"], "both training and evaluation"),
    (["kobest-copa"], "mc data set"),
    (["kornli"], "no train split"),
])
def test_evaluation_data_is_never_trained_on(tiny_sbert, tmp_path, train, message):
    with pytest.raises(KalbertError, match=message):
        train_sentence_model(SentenceTrainConfig(model=str(tiny_sbert), out=str(tmp_path / "x"), train=train))


def test_nli_rows_become_triplets_with_hard_negatives(tasks_of, tiny_sbert, tiny_data):
    model = load_sentence_model(tiny_sbert)
    by_name = {task.name: task for task in tasks_of(model, ["kornli:dev", "korsts"])}
    triplets = by_name["kornli:dev/3"]
    assert len(triplets.columns) == 3 and len(triplets) > 0 and triplets.prompt_names == ()
    assert triplets.columns[1][0] != triplets.columns[2][0]
    graded = by_name["korsts:train"]
    assert 0.0 <= graded.labels.min() and graded.labels.max() <= 1.0
    assert type(graded.loss).__name__ == "CoSENTLoss"


def test_paraphrase_pairs_train_as_graded_pairs_with_their_negatives(tasks_of, tiny_sbert, tiny_data):
    model = load_sentence_model(tiny_sbert)
    (ranked,) = tasks_of(model, ["afqmc:train"])
    (graded,) = tasks_of(model, ["afqmc:train"], pair_loss="graded")
    assert ranked.name == "afqmc:train/2" and set(ranked.labels) == {0.0}  # paraphrases only, labels unused
    assert graded.name == "afqmc:train/graded" and set(graded.labels) == {0.0, 1.0}
    assert len(graded) > len(ranked) and type(graded.loss).__name__ == "CoSENTLoss"


def test_cli_train_prints_scores(tiny_sbert, tiny_data, tmp_path, capsys):
    from kalbert.cli.main import main

    out = tmp_path / "cli"
    code = main(["sbert", "train", "--model", str(tiny_sbert), "--train", "korsts", "--test", "korsts:test",
                 "--out", str(out), "--max-steps", "2", "--batch-size", "16", "--lr", "1e-3"])
    captured = capsys.readouterr()
    assert code == 0 and (out / "modules.json").is_file() and "note" not in captured.err
    assert "korsts:dev Spearman" in captured.out and "korsts:test Spearman" in captured.out
    assert main(["sbert", "train", "--model", str(tiny_sbert), "--out", str(out)]) == 2  # exists, no --overwrite


def test_the_old_name_sts_still_runs_and_says_the_new_one(tiny_sbert, tiny_data, tmp_path, capsys):
    from kalbert.cli.main import main

    for verb in ("train", "sts"):
        with pytest.raises(SystemExit) as exited:
            main(["sbert", verb, "--help"])
        assert exited.value.code == 0 and "--negative-miner" in capsys.readouterr().out
    code = main(["sbert", "sts", "--model", str(tiny_sbert), "--train", "korsts", "--out", str(tmp_path / "old"),
                 "--max-steps", "1", "--batch-size", "16"])
    captured = capsys.readouterr()
    assert code == 0 and "korsts:dev Spearman" in captured.out
    note = captured.err.splitlines()[0]  # before the model loads (and prints its progress bar)
    assert note.startswith("kalbert: note: `kalbert sbert sts` is now `kalbert sbert train`")
    record = json.loads((tmp_path / "old" / "kalbert.json").read_text())
    assert record["command"].startswith("kalbert sbert train ")


def test_qa_questions_train_against_their_paragraph_with_prompts(tasks_of, tiny_sbert, tiny_qa_data, tmp_path):
    model = load_sentence_model(tiny_sbert)
    (task,) = tasks_of(model, ["korquad"])
    assert task.name == "korquad:train/3" and task.prompt_names == ("query", "document", "document")
    question, paragraph, negative = (column[0] for column in task.columns)
    assert question.endswith("?") and negative != paragraph and negative.split("에")[0] in paragraph

    config = SentenceTrainConfig(model=str(tiny_sbert), out=str(tmp_path / "retrieval"), train=["korquad", "korsts"],
                                 eval=["korsts:dev", "korquad:val"], query_prompt="query: ", passage_prompt="passage: ",
                                 max_seq_length=256, loop=LoopConfig(lr=1e-3, batch_size=4, max_steps=2, eval_steps=2))
    result = train_sentence_model(config)
    saved = json.loads((result.out / "config_sentence_transformers.json").read_text())
    assert saved["prompts"] == {"query": "query: ", "document": "passage: "}
    meta = json.loads((result.out / "kalbert.json").read_text())
    assert {(m["data"], m["metric"]) for m in meta["metrics"] if m["stage"] == "sts"} == {
        ("korsts:dev", "spearman_cosine"), ("korquad:val", "ndcg_at_10")}
    assert f"dev mean of korsts:dev Spearman, korquad:val nDCG@10: {result.dev:.4f}" in summary(result)


def test_a_corpus_trains_as_question_passage_rows_with_prompts(tasks_of, tiny_sbert, tiny_corpus):
    model = load_sentence_model(tiny_sbert)
    (task,) = tasks_of(model, ["kowiki"])
    assert task.name == "kowiki:all/2" and task.prompt_names == ("query", "document") and len(task) == 2
    (capped,) = tasks_of(model, ["kowiki"], max_rows=1)
    assert len(capped) == 1


def test_qa_test_articles_are_never_trained_on(tiny_sbert, tiny_qa_data, tmp_path):
    with pytest.raises(KalbertError, match="korquad:test is an evaluation split"):
        train_sentence_model(SentenceTrainConfig(model=str(tiny_sbert), out=str(tmp_path / "x"),
                                                 train=["korquad:test"]))


def test_val_questions_rank_among_train_paragraphs_but_never_test_ones(tiny_qa_data):
    evaluator = retrieval_evaluator("korquad:val")
    paragraphs = set(evaluator.corpus)
    val, train, test = ({e.context for e in load_qa("korquad", split)} for split in ("val", "train", "test"))
    assert set(evaluator.queries) == {e.question for e in load_qa("korquad", "val")}
    assert paragraphs == val | train and not paragraphs & test


def test_mini_batches_give_the_whole_batch_gradients(tasks_of, tiny_sbert, tiny_qa_data):
    import torch

    model = load_sentence_model(tiny_sbert).eval()  # no dropout: both passes see the same network

    def gradients(mini_batch_size):
        (task,) = tasks_of(model, ["korquad"], max_rows=8, mini_batch_size=mini_batch_size)
        features = [model.preprocess(list(column)) for column in task.columns]
        model.zero_grad()
        loss = task.loss(features, torch.zeros(len(task)))
        loss.backward()
        return type(task.loss).__name__, loss.item(), [p.grad.clone() for p in model.parameters() if p.grad is not None]

    whole, cached = gradients(None), gradients(3)
    assert (whole[0], cached[0]) == ("MultipleNegativesRankingLoss", "CachedMultipleNegativesRankingLoss")
    assert cached[1] == pytest.approx(whole[1], rel=1e-5)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(whole[2], cached[2], strict=True))


def test_in_batch_negative_batches_never_repeat_a_candidate(tasks_of, tiny_sbert, tiny_qa_data):
    import random

    from kalbert.sentence.loop import _batches

    model = load_sentence_model(tiny_sbert)
    tasks = tasks_of(model, ["korquad"])
    assert tasks and all(task.distinct_candidates for task in tasks)
    # rows sharing a paragraph (a KorQuAD paragraph has several questions), a row's negative another row's paragraph
    task = tasks[0]
    paragraphs = ["p0", "p0", "p1", "p1", "p2", "p3", "p4", "p5", "p0", "p6", "p7", "p8"]
    task.columns = [[f"q{i}" for i in range(12)], paragraphs, [f"n{i}" for i in range(11)] + ["p2"]]
    plan = _batches([task], 4, random.Random(0))
    assert sorted(row for _, batch in plan for row in batch) == list(range(12))
    for _, batch in plan:
        candidates = [column[row] for column in task.columns[1:] for row in batch]
        assert len(candidates) == len(set(candidates))
    task.columns[1] = [f"p{i}" for i in range(12)]  # nothing collides: plain chunks of the shuffled order
    task.columns[2] = [f"n{i}" for i in range(12)]
    assert all(len(batch) == 4 for _, batch in _batches([task], 4, random.Random(0)))
