"""`kalbert static train`: piece vectors fitted to the teacher's corpus sentence vectors (and pair sets: graded
ones with CoSENT, NLI, QA and parallel ones with in-batch negatives) lower the held-out loss, keep the folder
format, train Matryoshka prefixes, resume an interrupted run where it stopped and refuse bad input."""

from __future__ import annotations

import json
from dataclasses import fields, replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from kalbert.data import load_sts
from kalbert.errors import KalbertError
from kalbert.rows.config import RowsConfig
from kalbert.rows.references import TrainingRef
from kalbert.rows.sets import GradedPairs
from kalbert.static.config import StaticTrainConfig
from kalbert.static.model import load_static_model
from kalbert.static.train import (
    RANKING_SCALE,
    CorpusTask,
    PairBatches,
    cosent_loss,
    ranking_loss,
    target_loss,
    train_static,
)
from kalbert.training import LoopConfig

LOOP = {f.name for f in fields(LoopConfig)}
ROWS = {f.name for f in fields(RowsConfig)}


def _config(static_init, teacher_folder, tmp_path, **changes) -> StaticTrainConfig:
    """A quick config; ``changes`` named like loop or rows settings (epochs, batch_size, negative_miner, ...) go
    into its ``loop`` or ``rows``."""
    settings = dict(init=str(static_init), out=str(tmp_path / "trained"), teacher=str(teacher_folder),
                    max_sentences=400, dev_rows=100, eval=[], cache_dir=str(tmp_path / "cache"))
    loop, rows = dict(epochs=2, batch_size=64, lr=1e-2), {}
    for name, value in changes.items():
        (loop if name in LOOP else rows if name in ROWS else settings)[name] = value
    defaults = StaticTrainConfig(init="", out="")
    return StaticTrainConfig(**settings, loop=replace(defaults.loop, **loop), rows=replace(defaults.rows, **rows))


def test_training_lowers_the_heldout_loss_and_keeps_the_format(static_init, teacher, ko_corpus, tmp_path):
    from sentence_transformers import SentenceTransformer

    out, best = train_static(_config(static_init, teacher, tmp_path, corpus=[str(ko_corpus)]))
    history = json.loads((out / "training_log.json").read_text())["history"]
    assert [(r["stage"], r["epoch"], r["step"]) for r in history] == [("init", 0, 0), ("corpus", 1, 5),
                                                                      ("corpus", 2, 10)]  # 300 sentences, 64 a step
    assert history[-1]["heldout_loss"] < history[0]["heldout_loss"]
    assert best["stage"] == "corpus"
    meta = json.loads((out / "kalbert.json").read_text())
    assert meta["kind"] == "static-model" and [s["stage"] for s in meta["stages"]] == ["distill", "train"]
    stage = meta["stages"][-1]
    assert stage["corpus_train_sentences"] == 300 and stage["precision"] == "fp32"
    assert stage["config"]["loop"]["lr"] == 1e-2 and not (tmp_path / "trained.partial").exists()
    trained, _ = load_static_model(out)
    initial, _ = load_static_model(static_init)
    assert trained.vectors.shape == initial.vectors.shape and not np.allclose(trained.vectors, initial.vectors)
    model = SentenceTransformer(str(out), device="cpu", local_files_only=True)
    assert model.encode(["배우들의 연기가 좋았다"]).shape == (1, 16)


def test_matryoshka_prefixes_and_a_narrower_model(static_init, teacher, ko_corpus, tmp_path):
    from sentence_transformers import SentenceTransformer

    config = _config(static_init, teacher, tmp_path, corpus=[str(ko_corpus)], dim=12, matryoshka_dims=[6, 3],
                     epochs=1)
    out, _ = train_static(config)
    meta = json.loads((out / "kalbert.json").read_text())
    assert meta["dimension"] == 12 and meta["matryoshka_dims"] == [12, 6, 3]
    full = SentenceTransformer(str(out), device="cpu", local_files_only=True).encode(["좋은 영화"])
    small = SentenceTransformer(str(out), device="cpu", local_files_only=True, truncate_dim=6).encode(["좋은 영화"])
    np.testing.assert_allclose(small, full[:, :6])


def test_prefix_losses_average_over_the_prefixes():
    pred, target = torch.randn(5, 8), torch.randn(5, 8)
    separate = [target_loss(pred, target, [d], "cosine") for d in (8, 4)]
    assert target_loss(pred, target, [8, 4], "cosine").item() == pytest.approx(float(sum(separate) / 2))


def test_cosent_loss_rewards_the_gold_order():
    left = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    right = torch.tensor([[1.0, 0.1], [1.0, 1.0], [0.0, 1.0]])  # cosines fall from pair 0 to pair 2
    assert cosent_loss(left, right, torch.tensor([1.0, 0.5, 0.0]), [2]) < 0.01
    assert cosent_loss(left, right, torch.tensor([0.0, 0.5, 1.0]), [2]) > 10


def test_ranking_loss_rewards_each_anchor_its_own_positive():
    anchors = torch.eye(3)
    assert ranking_loss(anchors, anchors.clone(), anchors[:0], [3]) < 1e-6
    assert ranking_loss(anchors, anchors.roll(1, 0), anchors[:0], [3]) > 10
    hard = torch.tensor([[1.0, 0.01, 0.0]])  # a negative as near the first anchor as its positive
    assert ranking_loss(anchors, anchors.clone(), hard, [3]) > ranking_loss(anchors, anchors.clone(), anchors[:0], [3])


def test_nli_sets_train_with_in_batch_negatives_beside_graded_ones(static_init, teacher, korsts, tmp_path):
    out, _ = train_static(_config(static_init, teacher, tmp_path, sts=["korsts", "kornli:dev"], eval=["korsts:dev"],
                                  sts_epochs=1, batch_size=256))
    stage = json.loads((out / "kalbert.json").read_text())["stages"][-1]
    assert stage["korsts:train_pairs"] > 0 and 0 < stage["kornli:dev_pairs"] < 2490
    trained, initial = load_static_model(out)[0], load_static_model(static_init)[0]
    assert not np.allclose(trained.vectors, initial.vectors)
    with pytest.raises(KalbertError, match="evaluation split"):
        train_static(_config(static_init, teacher, tmp_path, sts=["kornli:test"], eval=["korsts:dev"],
                             out=str(tmp_path / "refused")))


def test_qa_sets_train_questions_against_their_paragraph_and_val_articles_pick(static_init, teacher, tiny_qa_data,
                                                                              tmp_path):
    out, best = train_static(_config(static_init, teacher, tmp_path, sts=["korquad", "korsts"],
                                     eval=["korsts:dev", "korquad:val"], sts_epochs=2, batch_size=4))
    record = json.loads((out / "kalbert.json").read_text())
    assert record["stages"][-1]["korquad:train_pairs"] == 14  # 7 train articles, two questions each
    assert {(m["data"], m["metric"]) for m in record["metrics"] if m["stage"] == "train"} == {
        ("korsts:dev", "spearman_cosine"), ("korquad:val", "ndcg_at_10")}
    assert 0 < best["korquad:val"] <= 1
    assert best["score"] == pytest.approx((best["korsts:dev"] + best["korquad:val"]) / 2)
    with pytest.raises(KalbertError, match="korquad:test is an evaluation split"):
        train_static(_config(static_init, teacher, tmp_path, sts=["korquad:test"], eval=["korsts:dev"],
                             out=str(tmp_path / "refused")))


def test_a_teacher_mines_the_qa_negatives_and_the_record_says_so(static_init, teacher, tiny_qa_data, tmp_path):
    out, _ = train_static(_config(static_init, teacher, tmp_path, sts=["korquad"], eval=["korquad:val"],
                                  negative_miner=str(teacher), negative_margin=1.0, sts_epochs=1, batch_size=4))
    (mined,) = json.loads((out / "kalbert.json").read_text())["stages"][-1]["mined_negatives"]
    assert mined["miner"] == str(teacher) and mined["questions"] == 14 and mined["replaced"] > 0


def test_a_score_teacher_trains_the_qa_rows_and_the_record_says_so(static_init, teacher, tiny_qa_data, tmp_path):
    out, _ = train_static(_config(static_init, teacher, tmp_path, sts=["korquad"], eval=["korquad:val"],
                                  score_teacher=str(teacher), sts_epochs=1, batch_size=4))
    config = json.loads((out / "kalbert.json").read_text())["stages"][-1]["config"]
    assert config["rows"]["score_teacher"] == str(teacher)


def test_teacher_logits_equal_to_the_students_add_nothing():
    torch.manual_seed(0)
    anchors, positives, negatives = torch.randn(4, 8), torch.randn(4, 8), torch.randn(2, 8)
    candidates = F.normalize(torch.cat([positives, negatives]), dim=-1)
    own = F.normalize(anchors, dim=-1) @ candidates.T * RANKING_SCALE
    plain = ranking_loss(anchors, positives, negatives, [8])
    assert ranking_loss(anchors, positives, negatives, [8], teacher=own) == pytest.approx(plain.item(), abs=1e-5)
    assert ranking_loss(anchors, positives, negatives, [8], teacher=-own) > plain + 1


def test_cosent_stage_on_sts_train_splits_only(static_init, teacher, korsts, tmp_path):
    out, best = train_static(_config(static_init, teacher, tmp_path, sts=["korsts"], eval=["korsts:dev"],
                                     sts_epochs=1, batch_size=256))
    history = json.loads((out / "training_log.json").read_text())["history"]
    assert [r["stage"] for r in history] == ["init", "pairs"]
    assert "korsts:dev" in best and json.loads((out / "kalbert.json").read_text())["stages"][-1]["korsts:train_pairs"]
    for reported in ("korsts:test", "klue-sts:dev"):
        with pytest.raises(KalbertError, match="evaluation split"):
            train_static(_config(static_init, teacher, tmp_path, sts=[reported], eval=["korsts:dev"],
                                 out=str(tmp_path / "refused")))


def test_cosent_stage_on_a_graded_pairs_file(static_init, teacher, korsts, tmp_path):
    mined = tmp_path / "mined.tsv"
    mined.write_text("sentence1\tsentence2\tscore\n" + "".join(
        f"영화가 {i}번 좋았다\t배우가 {i}번 웃었다\t{i % 6}\n" for i in range(40)), encoding="utf-8")
    out, _ = train_static(_config(static_init, teacher, tmp_path, sts=[str(mined)], eval=["korsts:dev"],
                                  sts_epochs=1))
    assert json.loads((out / "kalbert.json").read_text())["stages"][-1][f"{mined}_pairs"] == 40
    dev = load_sts("korsts", "dev")[0]
    mined.write_text(f"sentence1\tsentence2\tscore\n{dev.sentence1}\t{dev.sentence2}\t3.0\n", encoding="utf-8")
    with pytest.raises(KalbertError, match="holds 2 sentences that evaluation splits score"):
        train_static(_config(static_init, teacher, tmp_path, sts=[str(mined)], eval=["korsts:dev"],
                             out=str(tmp_path / "refused")))


def test_pair_batches_cover_every_pair_once_and_never_mix_sets(static_init):
    static, _ = load_static_model(static_init)
    sets = [GradedPairs(TrainingRef(name, "train", "sts", "ko"), [left] * n, [right] * n, scores)
            for name, left, right, n, scores in (("a", "좋다", "싫다", 5, np.linspace(0, 1, 5, dtype=np.float32)),
                                                 ("b", "영화", "배우", 3, np.ones(3, dtype=np.float32)))]
    mixed = PairBatches(static, sets, batch_size=2, score_temperature=0.01)
    assert len(mixed) == 3 + 2
    covered = {(index, int(row)) for index, rows in mixed.batches for row in rows}
    assert covered == {(0, r) for r in range(5)} | {(1, r) for r in range(3)}


def test_sts_sets_train_as_one_stage_after_the_corpus(static_init, teacher, ko_corpus, korsts, tmp_path):
    config = _config(static_init, teacher, tmp_path, corpus=[str(ko_corpus)], epochs=1, sts=["korsts", "stsb-zh"],
                     eval=["korsts:dev"], sts_epochs=1, batch_size=256)
    out, _ = train_static(config)
    history = json.loads((out / "training_log.json").read_text())["history"]
    assert [r["stage"] for r in history] == ["init", "corpus", "pairs"]
    stage = json.loads((out / "kalbert.json").read_text())["stages"][-1]
    assert stage["korsts:train_pairs"] > 0 and stage["stsb-zh:train_pairs"] > 0


def test_an_interrupted_run_resumes_where_it_stopped(static_init, teacher, ko_corpus, tmp_path, monkeypatch):
    """Killed in the pair stage, a rerun keeps the finished corpus stage, resumes the pairs at their last
    checkpoint and ends as an uninterrupted run does."""
    mined = tmp_path / "mined.tsv"
    mined.write_text("sentence1\tsentence2\tscore\n" + "".join(
        f"영화가 {i}번 좋았다\t배우가 {i}번 웃었다\t{i % 6}\n" for i in range(40)), encoding="utf-8")

    def config(out: str) -> StaticTrainConfig:  # 38 corpus steps, then 2 x 5 pair steps
        return _config(static_init, teacher, tmp_path, out=str(tmp_path / out), corpus=[str(ko_corpus)],
                       sts=[str(mined)], epochs=1, sts_epochs=2, batch_size=8, checkpoint_steps=1)

    whole_out, whole_best = train_static(config("whole"))
    pair_loss, corpus_loss = PairBatches.loss, CorpusTask.batch_loss
    calls = []

    def crashing(self, *args):
        calls.append(1)
        if len(calls) == 8:
            raise RuntimeError("killed")
        return pair_loss(self, *args)

    killed = config("killed")
    monkeypatch.setattr(PairBatches, "loss", crashing)
    with pytest.raises(RuntimeError, match="killed"):
        train_static(killed)
    partial = tmp_path / "killed.partial"
    assert sorted(p.name for p in partial.iterdir()) == ["run.json", "state-corpus.pt", "state-pairs.pt"]
    assert torch.load(partial / "state-pairs.pt", weights_only=False)["step"] == 7

    corpus_steps = []
    monkeypatch.setattr(PairBatches, "loss", pair_loss)
    monkeypatch.setattr(CorpusTask, "batch_loss", lambda self, *a: corpus_steps.append(1) or corpus_loss(self, *a))
    out, best = train_static(killed)
    assert corpus_steps == [] and not partial.exists()  # the corpus stage was not trained again
    logs = [json.loads((folder / "training_log.json").read_text())["history"] for folder in (out, whole_out)]
    assert [(r["stage"], r["step"]) for r in logs[0]] == [(r["stage"], r["step"]) for r in logs[1]] == [
        ("init", 0), ("corpus", 38), ("pairs", 5), ("pairs", 10)]
    assert [r["score"] for r in logs[0]] == pytest.approx([r["score"] for r in logs[1]], abs=1e-6)
    assert (best["stage"], best["step"]) == (whole_best["stage"], whole_best["step"])
    np.testing.assert_allclose(load_static_model(out)[0].vectors, load_static_model(whole_out)[0].vectors, atol=1e-6)


def test_bad_input_writes_nothing(static_init, teacher, zh_teacher, tmp_path):
    empty, latin1 = tmp_path / "empty.txt", tmp_path / "latin1.txt"
    empty.write_text("", encoding="utf-8")
    latin1.write_bytes("caf\xe9 au lait et un croissant\n".encode("latin-1"))
    cases = [({"corpus": [str(empty)]}, "is empty"),
             ({"corpus": [str(latin1)]}, "not valid UTF-8"),
             ({"corpus": [str(latin1)], "teacher": str(tmp_path / "missing")}, "teacher folder"),
             ({"corpus": [str(empty)], "teacher": str(zh_teacher)}, "was distilled from"),
             ({}, "no training sentences")]
    for changes, message in cases:
        with pytest.raises(KalbertError, match=message):
            train_static(_config(static_init, teacher, tmp_path, **changes))
    assert not (tmp_path / "trained").exists() and not list(tmp_path.glob(".trained.*"))
    (tmp_path / "trained").mkdir()
    with pytest.raises(KalbertError, match="already exists"):
        train_static(_config(static_init, teacher, tmp_path, corpus=[str(empty)]))
