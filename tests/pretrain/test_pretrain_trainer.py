"""`pretrain`: masked-only MLM head, export, exact resume, damaged checkpoints, NaN, interrupts, further-pretraining."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from pretrain_helpers import tiny_run
from transformers import AlbertForPreTraining, AutoModel, AutoTokenizer

from kalbert.errors import KalbertError
from kalbert.pretrain import PretrainingData, pretrain
from kalbert.pretrain.checkpoint import LATEST, checkpoint_dirs, latest_checkpoint
from kalbert.pretrain.masking import MaskingConfig, collate
from kalbert.pretrain.objective import PretrainingObjective
from kalbert.pretrain.presets import albert_config
from kalbert.pretrain.teacher_targets import instance_texts
from kalbert.pretrain.trainer import Trainer
from kalbert.vocab.files import CLS_ID, SEP_ID


def _metrics(run) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, ko_data):
    """A complete 6-step run (checkpoints at 3 and 6) that other tests copy or continue from."""
    out = tmp_path_factory.mktemp("runs") / "base"
    pretrain(tiny_run(ko_data, out))
    return out


def test_masked_positions_head_equals_the_full_head(ko_data):
    data = PretrainingData.open(ko_data)
    instances = data.split("train")
    batch = collate([instances[i] for i in range(8)], list(range(8)), (1, 0, 0), MaskingConfig(), data.vocab_size)
    torch.manual_seed(0)
    model = AlbertForPreTraining(albert_config(tiny_run(ko_data, "unused").model, data.vocab_size)).eval()
    out = PretrainingObjective(model, "mlm+sop")(**batch)
    reference = model(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                      attention_mask=batch["attention_mask"], labels=batch["labels"],
                      sentence_order_label=batch["sop_labels"]).loss
    ours = out["mlm_loss_sum"] / out["masked"] + out["sop_loss_sum"] / 8
    assert ours.item() == pytest.approx(reference.item(), rel=1e-5)


def test_run_exports_a_model_that_loads_anywhere(finished_run):
    model_dir = finished_run / "model"
    for name in ("config.json", "model.safetensors", "spiece.model", "tokenizer.json", "tokenizer_config.json",
                 "kalbert.json", "README.md", "learning_curves.png"):
        assert (model_dir / name).exists(), name
    assert type(AutoModel.from_pretrained(model_dir)).__name__ == "AlbertModel"
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    assert tokenizer.convert_ids_to_tokens(tokenizer("배우들의 연기")["input_ids"])[0] == "[CLS]"
    records = _metrics(finished_run)
    held = [r for r in records if r["split"] == "heldout"]
    assert [r["step"] for r in held] == [0, 3, 6]
    assert all(0 <= r["mlm_accuracy"] <= 1 and 0 <= r["sop_accuracy"] <= 1 and r["perplexity"] > 1 for r in held)
    assert [r["step"] for r in records if r["split"] == "train"] == [1, 2, 3, 4, 5, 6]
    meta = json.loads((model_dir / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["steps"] == 6 and meta["final_eval"]["mlm_accuracy"] == held[-1]["mlm_accuracy"]


def test_resume_after_a_kill_reproduces_the_uninterrupted_run(finished_run, ko_data, tmp_path):
    killed = tmp_path / "killed"
    shutil.copytree(finished_run, killed)
    shutil.rmtree(killed / "model")
    step6 = killed / "checkpoints" / "step-0000006"
    (step6 / "model.safetensors").write_bytes(b"half-written")  # died while writing step 6
    (killed / "checkpoints" / ".step-0000009.abc.partial").mkdir()  # a temp folder left by kill -9
    assert latest_checkpoint(killed).name == "step-0000003"
    pretrain(tiny_run(ko_data, killed, resume=True))
    expected = [r for r in _metrics(finished_run) if r["step"] > 3]
    resumed = [r for r in _metrics(killed) if r["step"] > 3]
    strip = ("tokens_per_s",)
    assert [{k: v for k, v in r.items() if k not in strip} for r in resumed] == \
        [{k: v for k, v in r.items() if k not in strip} for r in expected]
    a = AlbertForPreTraining.from_pretrained(finished_run / "model").state_dict()
    b = AlbertForPreTraining.from_pretrained(killed / "model").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not list((killed / "checkpoints").glob(".*.partial"))


def test_existing_run_and_changed_config_are_refused(finished_run, ko_data):
    with pytest.raises(KalbertError, match="already holds a run"):
        pretrain(tiny_run(ko_data, finished_run))
    with pytest.raises(KalbertError, match="lr"):
        pretrain(tiny_run(ko_data, finished_run, resume=True, lr=0.5))
    with pytest.raises(KalbertError, match="does not split"):
        pretrain(tiny_run(ko_data, finished_run.parent / "odd", batch_size=7, grad_accum=2))


def test_nan_loss_stops_and_names_the_last_good_checkpoint(ko_data, tmp_path, monkeypatch):
    forward = PretrainingObjective.forward
    calls = {"n": 0}

    def poisoned(self, **batch):
        out = forward(self, **batch)
        calls["n"] += self.training
        if calls["n"] > 4:
            out["mlm_loss_sum"] = out["mlm_loss_sum"] * float("nan")
        return out

    monkeypatch.setattr(PretrainingObjective, "forward", lambda self, **b: poisoned(self, **b))
    with pytest.raises(KalbertError, match=r"NaN/inf at step 5; last good checkpoint: .*step-0000003"):
        pretrain(tiny_run(ko_data, tmp_path / "nan"))


def test_interrupt_saves_a_checkpoint_and_resume_finishes(ko_data, tmp_path, monkeypatch):
    step = Trainer.train_step

    def interrupted(self, stop_requested):
        if self.step == 1:
            os.kill(os.getpid(), signal.SIGINT)
        return step(self, stop_requested)

    monkeypatch.setattr(Trainer, "train_step", interrupted)
    out = tmp_path / "interrupted"
    with pytest.raises(KeyboardInterrupt):
        pretrain(tiny_run(ko_data, out, max_steps=4, save_every=10))
    assert (out / "checkpoints" / LATEST).read_text().strip() == "step-0000002"
    monkeypatch.setattr(Trainer, "train_step", step)
    assert pretrain(tiny_run(ko_data, out, max_steps=4, save_every=10, resume=True)).exists()
    assert [c.name for c in checkpoint_dirs(out)] == ["step-0000004", "step-0000002"]


def test_further_pretraining_from_an_export(finished_run, ko_data, tmp_path):
    out = pretrain(tiny_run(ko_data, tmp_path / "further", init_from=str(finished_run / "model"), objective="mlm",
                            max_steps=2, eval_every=2, save_every=2))
    held = [r for r in _metrics(tmp_path / "further") if r["split"] == "heldout"]
    assert held[-1]["sop_accuracy"] is None and held[-1]["mlm_accuracy"] >= 0
    assert AutoModel.from_pretrained(out).config.vocab_size == PretrainingData.open(ko_data).vocab_size
    small = tmp_path / "small-vocab-model"
    AlbertForPreTraining(albert_config(tiny_run(ko_data, "x").model, 300)).save_pretrained(small)
    with pytest.raises(KalbertError, match="vocab/model mismatch"):
        pretrain(tiny_run(ko_data, tmp_path / "mismatch", init_from=str(small)))


def test_further_pretraining_grows_an_extended_vocabulary(finished_run, ko_vocab, ko_corpus, tmp_path):
    from kalbert.pretrain import DataBuildConfig, build_pretraining_data
    from kalbert.vocab import VocabExtendConfig, extend_vocab

    words = tmp_path / "words.txt"
    words.write_text("대한민국임시정부\n영화관람객\n", encoding="utf-8")
    extended, _ = extend_vocab(VocabExtendConfig(base=str(ko_vocab), out=str(tmp_path / "vocab-x"), words=str(words)))
    data = build_pretraining_data(DataBuildConfig(vocab=str(extended), inputs=[str(ko_corpus)],
                                                  out=str(tmp_path / "data-x"), max_seq_length=64,
                                                  max_documents=100, heldout_fraction=0.05, processes=1))
    out = pretrain(tiny_run(data, tmp_path / "grown", init_from=str(finished_run / "model"), max_steps=2))
    grown = AlbertForPreTraining.from_pretrained(out)
    old = AlbertForPreTraining.from_pretrained(finished_run / "model")
    assert grown.config.vocab_size == PretrainingData.open(data).vocab_size > old.config.vocab_size
    assert grown.predictions.bias.shape[0] == grown.config.vocab_size


def test_kill_9_mid_run_then_resume_matches(ko_data, tmp_path):
    import subprocess
    import sys
    import time

    reference = tmp_path / "reference"
    pretrain(tiny_run(ko_data, reference, max_steps=12, save_every=1, eval_every=4))
    killed = tmp_path / "killed"
    command = [sys.executable, "-m", "kalbert", "pretrain", "--data", str(ko_data), "--out", str(killed),
               "--max-steps", "12", "--batch-size", "8", "--embedding-size", "16", "--hidden-size", "32",
               "--num-layers", "2", "--num-heads", "2", "--intermediate-size", "64", "--eval-every", "4",
               "--eval-instances", "16", "--save-every", "1", "--log-every", "1", "--warmup-ratio", "0.2",
               "--threads", "1", "--no-tensorboard", "--precision", "fp32"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    latest = killed / "checkpoints" / LATEST
    deadline = time.time() + 300
    while time.time() < deadline and not (latest.exists() and latest.read_text().strip() >= "step-0000005"):
        time.sleep(0.05)
    process.kill()  # SIGKILL, whatever it is writing
    process.wait()
    assert latest_checkpoint(killed) is not None
    pretrain(tiny_run(ko_data, killed, max_steps=12, save_every=1, eval_every=4, resume=True))
    strip = ("tokens_per_s",)
    assert [{k: v for k, v in r.items() if k not in strip} for r in _metrics(killed)] == \
        [{k: v for k, v in r.items() if k not in strip} for r in _metrics(reference)]




@pytest.fixture
def backward_losses(monkeypatch) -> list[float]:
    """Every loss that ``backward()`` is called on, in order (one per step of a one-micro-batch run)."""
    losses: list[float] = []
    backward = torch.Tensor.backward

    def recording(self, *args, **kwargs):
        losses.append(float(self.detach()))
        return backward(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "backward", recording)
    return losses


def test_sop_weight_and_pooling_reach_the_loss(ko_data, tmp_path, backward_losses):
    """--sop-weight scales only the SOP term; --sop-pooling mean runs end to end and is recorded."""
    runs = ("w1", "w3", "w0")
    for run, weight in zip(runs, (1.0, 3.0, 0.0), strict=True):
        pretrain(tiny_run(ko_data, tmp_path / run, max_steps=1, sop_weight=weight, sop_pooling="mean"))
    losses = dict(zip(runs, backward_losses, strict=True))
    records = {run: [r for r in _metrics(tmp_path / run) if r["split"] == "train"][0] for run in runs}
    mlm, sop = records["w1"]["mlm_loss"], records["w1"]["sop_loss"]
    assert losses["w1"] == pytest.approx(mlm + sop, rel=1e-5)
    assert losses["w3"] == pytest.approx(mlm + 3 * sop, rel=1e-5)
    assert losses["w0"] == pytest.approx(mlm, rel=1e-5)
    meta = json.loads((tmp_path / "w3" / "model" / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["config"]["sop_pooling"] == "mean" and meta["config"]["sop_weight"] == 3.0
    with pytest.raises(KalbertError, match="sop-weight"):
        pretrain(tiny_run(ko_data, tmp_path / "negative", sop_weight=-1.0))


@pytest.fixture(scope="module")
def sentence_teacher(tmp_path_factory, ko_vocab, make_tiny_albert):
    """``sentence_teacher(hidden)``: a random SentenceTransformer folder of that width, as a distillation teacher."""
    from kalbert.sentence.export import ExportConfig, export_sentence_model

    def make(hidden: int) -> Path:
        folder = tmp_path_factory.mktemp(f"teacher{hidden}")
        checkpoint = make_tiny_albert(folder / "ckpt", ko_vocab, head="AlbertModel", hidden=hidden, seed=5,
                                      languages=["ko"])
        return export_sentence_model(ExportConfig(model=str(checkpoint), out=str(folder / "st"), normalize=True))

    return make


def test_instance_texts_give_back_the_instance(ko_data):
    """The teacher reads the text the student reads: A then B, without [CLS], [SEP] or <unk> marks."""
    import sentencepiece as spm

    data = PretrainingData.open(ko_data)
    instances = data.split("heldout")
    processor = spm.SentencePieceProcessor(model_file=str(data.vocab_dir / "spiece.model"))
    texts = instance_texts(instances, np.arange(len(instances)), processor)
    assert len(texts) == len(instances) and all(texts)
    for i, text in enumerate(texts):
        ids = [t for t in instances[i].ids.tolist() if t not in (CLS_ID, SEP_ID, processor.unk_id())]
        assert text.split() and "".join(text.split()) == "".join(processor.decode(ids).split())
        assert not any(mark in text for mark in ("[CLS]", "[SEP]", "\u2047"))


def test_distillation_term_reaches_the_loss_and_the_metrics(ko_data, tmp_path, backward_losses, sentence_teacher):
    """--distill-teacher adds weight x (1 - cos) per instance to the loss, is logged apart from it, reuses the
    embedding cache on a second run, and refuses a teacher whose width is not the model's."""
    from kalbert.teachers.cache import default_cache_dir

    teacher = str(sentence_teacher(32))
    shards = []
    for run in ("first", "second"):
        pretrain(tiny_run(ko_data, tmp_path / run, max_steps=1, distill_teacher=teacher, distill_weight=2.0))
        shards.append(sorted(default_cache_dir().rglob("shard-*.npz")))
    assert shards[0] and shards[1] == shards[0]  # the second run encoded nothing
    records = _metrics(tmp_path / "first")
    train = [r for r in records if r["split"] == "train"][0]
    assert 0 < train["distill_loss"] < 2
    assert backward_losses[0] == pytest.approx(train["mlm_loss"] + train["sop_loss"] + 2 * train["distill_loss"],
                                               rel=1e-5)
    assert [r["split"] for r in records if "distill_loss" in r] == ["heldout", "train", "heldout"]
    strip = ("tokens_per_s",)
    assert [{k: v for k, v in r.items() if k not in strip} for r in _metrics(tmp_path / "second")] == \
        [{k: v for k, v in r.items() if k not in strip} for r in records]
    with pytest.raises(KalbertError, match="hidden size"):
        pretrain(tiny_run(ko_data, tmp_path / "narrow", distill_teacher=str(sentence_teacher(24))))
    assert not (tmp_path / "narrow").exists()


def test_bf16_teacher_has_its_own_cache_and_nearly_the_same_vectors(sentence_teacher):
    from kalbert.teachers.backends import load_teacher

    folder = str(sentence_teacher(32))
    plain, bf16 = load_teacher(folder), load_teacher(folder, bf16=True)
    assert bf16.fingerprint == plain.fingerprint + "-bf16"
    texts = ["한국어 문장입니다.", "두 번째 문장은 조금 더 깁니다."]
    assert np.all(np.sum(plain.encode(texts) * bf16.encode(texts), axis=1) > 0.98)


@pytest.mark.slow  # compiling the forward and backward takes a minute or more on a small CPU
def test_compiled_run_matches_and_resumes_like_the_plain_one(ko_data, tmp_path):
    """--compile: the losses of the plain run (fp32, to rounding), checkpoints of the plain model (the same keys),
    and an exact resume."""
    for run, compiled in (("plain", False), ("compiled", True)):
        pretrain(tiny_run(ko_data, tmp_path / run, max_steps=2, save_every=1, eval_every=2, compile=compiled))
    plain, compiled = _metrics(tmp_path / "plain"), _metrics(tmp_path / "compiled")
    assert [(r["split"], r["step"]) for r in compiled] == [(r["split"], r["step"]) for r in plain]
    for a, b in zip(plain, compiled, strict=True):
        for key in ("loss", "mlm_loss", "sop_loss"):
            assert b[key] == pytest.approx(a[key], rel=1e-4), (a["split"], a["step"], key)
    keys = {run: set(AlbertForPreTraining.from_pretrained(tmp_path / run / "checkpoints" / "step-0000001")
                     .state_dict()) for run in ("plain", "compiled")}
    assert keys["compiled"] == keys["plain"]

    resumed = tmp_path / "resumed"
    shutil.copytree(tmp_path / "compiled", resumed)
    shutil.rmtree(resumed / "model")
    shutil.rmtree(resumed / "checkpoints" / "step-0000002")
    (resumed / "checkpoints" / LATEST).write_text("step-0000001\n")
    pretrain(tiny_run(ko_data, resumed, max_steps=2, save_every=1, eval_every=2, compile=True, resume=True))
    strip = ("tokens_per_s",)
    assert [{k: v for k, v in r.items() if k not in strip} for r in _metrics(resumed)] == \
        [{k: v for k, v in r.items() if k not in strip} for r in compiled]


@pytest.mark.parametrize("objective", ["mlm+sop", "mlm+rss"])
def test_batches_built_ahead_in_workers_give_the_same_run(finished_run, ko_data, tmp_path, objective):
    """--loader-workers builds the coming steps' batches in other processes: the same losses and weights,
    exactly, as building each batch in the training process (finished_run, or its span-selection twin)."""
    reference = finished_run
    if objective != "mlm+sop":
        reference = tmp_path / "in-process"
        pretrain(tiny_run(ko_data, reference, objective=objective))
    ahead = tmp_path / "workers"
    pretrain(tiny_run(ko_data, ahead, objective=objective, loader_workers=2))
    strip = ("tokens_per_s",)
    assert [{k: v for k, v in r.items() if k not in strip} for r in _metrics(ahead)] == \
        [{k: v for k, v in r.items() if k not in strip} for r in _metrics(reference)]
    a = AlbertForPreTraining.from_pretrained(reference / "model").state_dict()
    b = AlbertForPreTraining.from_pretrained(ahead / "model").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
