"""A few training steps write a folder that loads without kalbert, scores as kalbert scores, and says what it is."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from kalbert.artifact import Kind, folder_kind, read_meta
from kalbert.errors import KalbertError

PASSAGES = ["서울은 한국의 도시이다. 인구가 많다.", "부산에는 오래된 시장이 있다.", "臺北市是中華民國的首都。"]


def test_the_folder_loads_with_crossencoder_and_transformers(tiny_reranker):
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    pairs = [("서울은 어느 나라의 도시인가?", passage) for passage in PASSAGES]
    ours = CrossEncoder(str(tiny_reranker), local_files_only=True).predict(pairs)
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_reranker), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(tiny_reranker), local_files_only=True).eval()
    inputs = tokenizer([q for q, _ in pairs], [p for _, p in pairs], padding=True, truncation=True,
                       return_tensors="pt")
    with torch.inference_mode():
        plain = model(**inputs).logits[:, 0].numpy()
    assert model.config.num_labels == 1 and np.allclose(ours, plain, atol=1e-5)
    assert (tiny_reranker / "spiece.model").is_file() and tokenizer.model_max_length == 128  # the positions


def test_the_record_and_card_say_what_was_measured(tiny_reranker):
    meta = read_meta(tiny_reranker, Kind.RERANKER)
    assert folder_kind(tiny_reranker) == Kind.RERANKER
    assert [s["data"] for s in meta["train_sets"]] == ["korquad:train", "answers-ko:train"]
    assert [s["data"] for s in meta["evaluation"]["sets"]] == ["korquad:val", "answers-ko:dev"]
    assert meta["steps"] == 2 and meta["selected_step"] == 2 and meta["parameters"] > 0
    assert {m["data"] for m in meta["metrics"]} == {"korquad:val", "answers-ko:dev"}
    card = (tiny_reranker / "README.md").read_text(encoding="utf-8")
    assert "korquad:val" in card and "rerank@5" in card and meta["command"] in card
    truncation = json.loads((tiny_reranker / "tokenizer.json").read_text(encoding="utf-8"))["truncation"]
    assert truncation == {"direction": "Right", "max_length": 128, "strategy": "LongestFirst", "stride": 0}
    assert meta["windows"] == {"tokens": 48, "stride": 64, "per_passage": 1} and meta["first_stage_weight"] == 0.6


def test_load_reranker_scores_as_crossencoder_predicts(tiny_reranker):
    from sentence_transformers import CrossEncoder

    from kalbert.rerank import load_reranker

    reranker = load_reranker(tiny_reranker, precision="fp32", batch_size=2)
    scores = reranker.score("서울은 어느 나라의 도시인가?", PASSAGES)
    expected = CrossEncoder(str(tiny_reranker), local_files_only=True).predict(
        [("서울은 어느 나라의 도시인가?", p) for p in PASSAGES])
    assert reranker.name == tiny_reranker.name and scores.dtype == np.float32
    assert np.allclose(scores, expected, atol=1e-5)
    assert reranker.score("서울은?", []).shape == (0,)


def test_bf16_casts_the_weights_once_and_keeps_scores_close(tiny_reranker, fake_cpu):
    """Native bf16: the weights are cast at load (no autocast per layer); scores stay near fp32's."""
    import torch

    from kalbert.rerank import load_reranker

    fake_cpu({"avx512f", "avx512_bf16", "amx_bf16", "amx_tile"})
    reranker = load_reranker(tiny_reranker)
    assert reranker.bf16 and reranker.model.dtype == torch.bfloat16
    exact = load_reranker(tiny_reranker, precision="fp32").score("서울은 어느 나라의 도시인가?", PASSAGES)
    scores = reranker.score("서울은 어느 나라의 도시인가?", PASSAGES)
    assert scores.dtype == np.float32 and np.allclose(scores, exact, atol=0.1)
    fake_cpu({"avx2", "fma"})
    assert load_reranker(tiny_reranker).model.dtype == torch.float32


def test_a_crossencoder_folder_made_elsewhere_is_a_reranker(tiny_reranker, tmp_path):
    copy = tmp_path / "plain"
    shutil.copytree(tiny_reranker, copy)
    (copy / "kalbert.json").unlink()
    assert folder_kind(copy) == Kind.RERANKER


def test_a_depth_above_the_evaluation_passages_is_refused_before_the_model_loads(rerank_data, tiny_qa_albert,
                                                                                   rerank_config, tmp_path,
                                                                                   monkeypatch):
    from kalbert.rerank import train

    monkeypatch.setattr(train, "build_cross_encoder", lambda *a: pytest.fail("the model loaded"))
    with pytest.raises(KalbertError, match="rerank depth 500 is above the 16 passages of korquad:val"):
        train.train_reranker(rerank_config(tmp_path / "out", tiny_qa_albert, depth=500))


@pytest.mark.parametrize("loss", ["mnrl", "bce"])
def test_every_loss_trains(rerank_data, tiny_qa_albert, rerank_config, tmp_path, loss):
    from kalbert.rerank import train_reranker

    meta = train_reranker(rerank_config(tmp_path / loss, tiny_qa_albert, loss=loss, max_steps=1,
                                        eval=["answers-ko:dev"]))
    assert meta["config"]["loss"] == loss and meta["history"][-1]["train_loss"] > 0


def test_training_on_the_windows_scoring_reads(rerank_data, tiny_qa_albert, rerank_config, tmp_path, monkeypatch):
    from kalbert.rerank import train

    read = []
    original = train.read_windows
    monkeypatch.setattr(train, "read_windows", lambda row, *args: read.append(row) or original(row, *args))
    meta = train.train_reranker(rerank_config(tmp_path / "out", tiny_qa_albert, train_on_windows=True, max_steps=1,
                                              eval=["answers-ko:dev"]))
    assert read and meta["config"]["train_on_windows"] and meta["history"][-1]["train_loss"] > 0


def test_a_killed_run_resumes_from_its_checkpoint(rerank_data, tiny_qa_albert, rerank_config, tmp_path,
                                                 monkeypatch):
    from kalbert.rerank import train

    config = rerank_config(tmp_path / "out", tiny_qa_albert, eval=["answers-ko:dev"], max_steps=3)
    config.loop.checkpoint_steps = 1

    def killed(*args) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt):
        patch.setattr(train, "check_reloads", killed)  # killed while saving, after the last checkpoint
        train.train_reranker(config)
    assert (tmp_path / "out.partial" / "state.pt").is_file() and not (tmp_path / "out").exists()
    meta = train.train_reranker(config)
    assert meta["steps"] == 3 and not (tmp_path / "out.partial").exists()


def test_the_record_is_complete_and_its_verb_reruns_it(tiny_reranker):
    """What tests/test_stage.py checks for every other kind, for the reranker (its lineage needs the rerank data)."""
    from kalbert import __version__
    from kalbert.artifact import Kind, read_meta
    from kalbert.cli.common import config_from_args
    from kalbert.cli.main import build_parser
    from kalbert.stage import COMMON_FIELDS

    meta = read_meta(tiny_reranker, expect=Kind.RERANKER)
    assert [key for key in COMMON_FIELDS if key not in meta] == []
    assert meta["kalbert_version"] == __version__ and meta["parents"] and meta["hardware"]["cpu"]
    assert (tiny_reranker / "README.md").is_file()
    args = build_parser().parse_args(["rerank", "train", "--config", str(tiny_reranker / "kalbert.json")])
    assert config_from_args(args) is not None


def test_a_teacher_is_distilled_into_fewer_layers(rerank_data, tiny_reranker, rerank_config, tmp_path):
    from kalbert.rerank import train_reranker

    out = tmp_path / "student"
    meta = train_reranker(rerank_config(out, tiny_reranker, loss="listnet", teacher=str(tiny_reranker), layers=1,
                                        max_steps=1, eval=["answers-ko:dev"]))
    assert json.loads((out / "config.json").read_text(encoding="utf-8"))["num_hidden_layers"] == 1
    assert meta["config"]["teacher"] == str(tiny_reranker) and meta["history"][-1]["train_loss"] > 0


def test_the_teachers_scores_are_the_targets_of_each_list(rerank_data):
    from kalbert.rerank.rows import RerankRow
    from kalbert.rerank.train import loss_inputs

    class Teacher:
        def score_pairs(self, pairs):
            return np.array([float(len(passage)) for _, passage in pairs], dtype=np.float32)

    rows = [RerankRow("질문", "정답 문단", ("오답", "다른 오답 문단"))]
    (queries, lists), labels = loss_inputs("listnet", rows, "cpu", Teacher())
    assert queries == ["질문"] and lists == [["정답 문단", "오답", "다른 오답 문단"]]
    assert labels[0].tolist() == [5.0, 2.0, 8.0]
    assert loss_inputs("listnet", rows, "cpu")[1][0].tolist() == [1.0, 0.0, 0.0]
