"""`--objective mlm+rss`: recurring spans become questions, the span-selection head learns, runs resume and export."""

from __future__ import annotations

import json
import shutil
from collections import Counter

import numpy as np
import pytest
import torch
from pretrain_helpers import SEQ_LEN, tiny_run
from transformers import AlbertForPreTraining

from kalbert.errors import KalbertError
from kalbert.pretrain import PretrainingData, pretrain
from kalbert.pretrain.batches import make_batch
from kalbert.pretrain.checkpoint import TRAINER_STATE, checkpoint_dirs
from kalbert.pretrain.instances import Instance
from kalbert.pretrain.masking import IGNORE, MaskingConfig, collate
from kalbert.pretrain.objective import PretrainingObjective
from kalbert.pretrain.presets import albert_config
from kalbert.pretrain.rss import RecurringSpans, trivial_pieces
from kalbert.vocab.files import CLS_ID, MASK_ID, SEP_ID

COMMON, DIGIT = 7, 8  # pieces the hand-made tables mark as too common / without letters


def _instance(a: list[int], b: list[int], flags: list[int] | None = None) -> Instance:
    ids = np.array([CLS_ID, *a, SEP_ID, *b, SEP_ID], dtype=np.int64)
    return Instance(ids, np.array(flags or [3] * len(ids), dtype=np.uint8), len(a), 0)


def _spans(**caps) -> RecurringSpans:
    common, letterless = np.zeros(100, dtype=bool), np.zeros(100, dtype=bool)
    common[:5] = common[COMMON] = letterless[DIGIT] = True
    return RecurringSpans(common, letterless, **{"unit": "token", **caps})


def _visible(ids: np.ndarray, run: list[int]) -> int:
    return sum(ids[i:i + len(run)].tolist() == run for i in range(len(ids) - len(run) + 1))


# every token a unit; "10 11 12" three times (across A and B), "7" trivial, "50" twice, "60" once before a [SEP]
HAND_MADE = _instance([10, 11, 12, 20, 10, 11, 12, COMMON, 60], [50, COMMON, 10, 11, 12, 31, COMMON, 50, 60])


def test_recurring_spans_become_questions_that_point_at_the_kept_copy():
    question = _spans().questions(HAND_MADE, np.random.default_rng(0))
    ids = question.instance.ids
    assert [len(p) for p in (question.slots, question.starts, question.ends)] == [4, 4, 4]
    assert (ids[question.slots] == MASK_ID).all() and MASK_ID not in np.delete(ids, question.slots)
    answers = {tuple(ids[s:e + 1].tolist()) for s, e in zip(question.starts, question.ends, strict=True)}
    assert answers == {(10, 11, 12), (50,), (60,)}  # the longest first, its sub-spans never asked about
    for run in answers:
        assert _visible(ids, list(run)) == 1  # one copy left: the answer is unambiguous
    assert sorted(Counter(question.starts.tolist()).values()) == [1, 1, 2]  # the three-fold run's slots share one
    assert _visible(ids, [COMMON]) == 3  # trivial pieces are never asked about
    assert len(ids) == len(HAND_MADE.ids) - 2 * 2  # each replaced 3-piece copy became one [MASK]
    length_a = question.instance.length_a
    assert ids[length_a + 1] == SEP_ID and ids[-1] == SEP_ID and (ids == SEP_ID).sum() == 2
    assert question.answers().sum() == 3 + 1 + 1
    again = _spans().questions(HAND_MADE, np.random.default_rng(0))
    assert np.array_equal(again.instance.ids, ids) and np.array_equal(again.starts, question.starts)


def test_caps_on_questions_and_span_length():
    one = _spans(max_questions=1).questions(HAND_MADE, np.random.default_rng(1))
    assert len(one.slots) == 1  # the three-fold run needs two slots: skipped for a two-fold one
    short = _spans(max_span=2).questions(HAND_MADE, np.random.default_rng(1))
    assert len(short.slots) and ((short.ends - short.starts) < 2).all()
    # 20 two-fold runs, each between pieces that occur once
    many = _instance([x for t in range(10, 30) for x in (t, t + 40)], [x for t in range(10, 30) for x in (t, t + 70)])
    assert len(_spans().questions(many, np.random.default_rng(2)).slots) == 20
    assert len(_spans(max_questions=5).questions(many, np.random.default_rng(2)).slots) == 5


def test_spans_keep_to_units_and_never_cross_a_separator():
    # "11 12" recurs as pieces, but 11 continues the word of 10 / 13: only the whole unit "12" is a candidate
    flags = [3, 1, 0, 1, 3, 1, 0, 1, 3]
    groups = _spans(unit="word").recurring(_instance([10, 11, 12], [13, 11, 12], flags))
    assert groups == [[(3, 4), (7, 8)]]
    # a run never opens or ends on a trivial unit: "10 7" and "8 10" recur, but only "10" is asked about
    assert _spans().recurring(_instance([DIGIT, 10, COMMON], [DIGIT, 10, COMMON])) == [[(2, 3), (6, 7)]]
    # a unit of several common pieces is a word: with units of words, "7 7" is asked about, "7" is not
    assert _spans(unit="word").recurring(_instance([COMMON, COMMON, COMMON], [COMMON, COMMON],
                                                   [3, 1, 0, 1, 3, 1, 0, 3])) == [[(1, 3), (5, 7)]]
    # "40 41" recurs only if the [SEP] between A's 40 and B's 41 is skipped: each piece alone recurs
    crossing = _instance([40], [41, 40, 41])
    assert sorted(_spans().recurring(crossing)) == [[(1, 2), (4, 5)], [(3, 4), (5, 6)]]


def test_trivial_pieces_from_a_vocabulary(ko_vocab):
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=str(ko_vocab / "spiece.model"))
    common, letterless = trivial_pieces(ko_vocab, processor.get_piece_size())
    assert common[:105].all() and not common[105:].any()
    for text, empty in (("▁", True), (")", True), ("1", True), ("▁영화", False), ("이", False)):
        assert letterless[processor.piece_to_id(text)] == empty, text


def _data_batch(ko_data, rss: RecurringSpans, indices: np.ndarray, capacity: int | None = None):
    data = PretrainingData.open(ko_data)
    return data, make_batch(data.split("train"), indices, (3, 0, 0), MaskingConfig(), data.vocab_size,
                            capacity, rss=rss)


@pytest.fixture(scope="module")
def ko_spans(ko_data) -> RecurringSpans:
    data = PretrainingData.open(ko_data)
    return RecurringSpans(*trivial_pieces(data.vocab_dir, data.vocab_size))


def test_batches_carry_questions_and_keep_answers_unmasked(ko_data, ko_spans):
    data = PretrainingData.open(ko_data)
    instances = [data.split("train")[i] for i in range(32)]
    plain = collate(instances, list(range(32)), (3, 0, 0), MaskingConfig(), data.vocab_size)
    batch = collate(instances, list(range(32)), (3, 0, 0), MaskingConfig(), data.vocab_size, ko_spans)
    assert "rss_starts" not in plain
    slots = batch["rss_starts"] != IGNORE
    assert slots.sum() > 0 and (batch["input_ids"][slots] == MASK_ID).all()
    assert (batch["labels"][slots] == IGNORE).all()  # a slot is no MLM target
    for row, column in slots.nonzero().tolist():
        start, end = int(batch["rss_starts"][row, column]), int(batch["rss_ends"][row, column])
        assert start <= end < int(batch["attention_mask"][row].sum())
        assert (batch["labels"][row, start:end + 1] == IGNORE).all()  # the answer stays readable
        assert (batch["input_ids"][row, start:end + 1] != MASK_ID).all()
    assert 0.1 < float((batch["labels"] != IGNORE).sum() / (plain["labels"] != IGNORE).sum()) < 1.1


def test_packed_span_selection_matches_the_padded_one(ko_data, ko_spans):
    train = PretrainingData.open(ko_data).split("train")
    order = np.argsort([len(train[i].ids) for i in range(len(train))], kind="stable")
    indices = np.concatenate([order[:8], order[-8:]])  # short ones pack into shared rows
    _, padded = _data_batch(ko_data, ko_spans, indices)
    _, packed = _data_batch(ko_data, ko_spans, indices, SEQ_LEN)
    assert int(packed.questions) == int(padded.questions) > 0 and packed.positions < padded.positions
    torch.manual_seed(0)
    model = AlbertForPreTraining(albert_config(tiny_run(ko_data, "unused").model, PretrainingData.open(
        ko_data).vocab_size)).eval()
    objective = PretrainingObjective(model, "mlm+rss")
    a, b = objective(**padded.inputs), objective(**packed.inputs)
    assert "sop_loss_sum" not in a
    for name in ("rss_loss_sum", "rss_correct", "questions", "mlm_loss_sum"):
        assert b[name].item() == pytest.approx(a[name].item(), rel=1e-5), name


def test_span_selection_head_learns(ko_data, ko_spans):
    data, batch = _data_batch(ko_data, ko_spans, np.arange(16))
    torch.manual_seed(0)
    model = AlbertForPreTraining(albert_config(tiny_run(ko_data, "unused").model, data.vocab_size))
    objective = PretrainingObjective(model, "mlm+rss")
    optimizer = torch.optim.AdamW(objective.parameters(), lr=3e-3)
    losses = []
    for _ in range(12):
        out = objective(**batch.inputs)
        loss = out["rss_loss_sum"] / out["questions"]
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert losses[-1] < 0.8 * losses[0]
    assert objective.rss_head.start.weight.grad is not None


def _metrics(run) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def rss_run(tmp_path_factory, ko_data):
    out = tmp_path_factory.mktemp("rss-runs") / "base"
    pretrain(tiny_run(ko_data, out, objective="mlm+rss"))
    return out


def test_run_logs_span_selection_and_checkpoints_its_head(rss_run):
    records = _metrics(rss_run)
    for record in records:
        assert record["sop_accuracy"] is None and 0 <= record["rss_accuracy"] <= 1 and record["rss_questions"] > 0
        assert record["loss"] == pytest.approx(record["mlm_loss"] + record["rss_loss"])
    state = torch.load(checkpoint_dirs(rss_run)[0] / TRAINER_STATE, weights_only=False)
    assert set(state["rss_head"]) == {"start.weight", "end.weight"}
    meta = json.loads((rss_run / "model" / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["config"]["objective"] == "mlm+rss" and "rss_accuracy" in meta["final_eval"]
    assert not any(key.startswith("rss") for key in AlbertForPreTraining.from_pretrained(
        rss_run / "model").state_dict())


def test_killed_rss_run_resumes_exactly_and_refuses_another_objective(rss_run, ko_data, tmp_path):
    killed = tmp_path / "killed"
    shutil.copytree(rss_run, killed)
    shutil.rmtree(killed / "model")
    shutil.rmtree(killed / "checkpoints" / "step-0000006")
    (killed / "checkpoints" / "latest").write_text("step-0000003\n")
    with pytest.raises(KalbertError, match="objective: 'mlm\\+rss' -> 'mlm\\+sop'"):
        pretrain(tiny_run(ko_data, killed, resume=True))
    pretrain(tiny_run(ko_data, killed, objective="mlm+rss", resume=True))
    strip = ("tokens_per_s",)
    assert [{k: v for k, v in r.items() if k not in strip} for r in _metrics(killed)] == \
        [{k: v for k, v in r.items() if k not in strip} for r in _metrics(rss_run)]


def test_accumulated_micro_batches_match_one_batch(ko_data, tmp_path):
    """The span-selection loss is normalised by the global batch's question count, not each micro-batch's."""
    runs = {"one": 1, "accum": 4}
    for name, accumulation in runs.items():
        pretrain(tiny_run(ko_data, tmp_path / name, objective="mlm+rss", max_steps=3, eval_every=3, save_every=3,
                          grad_accum=accumulation))
    one, accumulated = (_metrics(tmp_path / name) for name in runs)
    for a, b in zip(one, accumulated, strict=True):
        assert (a["split"], a["step"]) == (b["split"], b["step"])
        for key in ("rss_loss", "rss_accuracy", "loss"):
            assert b[key] == pytest.approx(a[key], rel=1e-5), key


def test_cli_rss_run_exports_a_model_that_qa_fine_tunes(ko_data, rss_run, tmp_path, capsys):
    from kalbert.cli.main import main
    from kalbert.data import data_path

    run = tmp_path / "further"
    assert main(["pretrain", "--data", str(ko_data), "--init-from", str(rss_run / "model"), "--objective", "mlm+rss",
                 "--out", str(run), "--max-steps", "2", "--batch-size", "4", "--eval-every", "2",
                 "--eval-instances", "8", "--no-tensorboard", "--threads", "1", "--rss-max-questions", "5"]) == 0
    held = [r for r in _metrics(run) if r["split"] == "heldout"]
    assert held[-1]["rss_questions"] <= 5 and "rss_accuracy" in held[-1]
    try:
        data_path("korquad", "dev")
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")
    qa = tmp_path / "qa"
    assert main(["qa", "train", "--model", str(run / "model"), "--task", "korquad", "--out", str(qa), "--epochs", "1",
                 "--batch-size", "8", "--max-seq-length", "128", "--doc-stride", "32", "--max-rows", "8",
                 "--max-eval-rows", "2"]) == 0
    assert json.loads((qa / "kalbert.json").read_text(encoding="utf-8"))["kind"] == "qa"
