"""`kalbert qa train` and `kalbert mc train` from a BERT (the e5 teacher, the small ALBERTs' reference point):
tiny random BERTs, one laid out as `kalbert teacher export` writes multilingual-e5-small (XLM-R tokenizer,
SentenceTransformer files at the root) and one with a single token type, trained one step each (seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kalbert.cli.main import main
from kalbert.data import data_path
from kalbert.errors import KalbertError
from kalbert.tasks import MCTrainConfig, predict_mc, train_mc
from kalbert.tasks.encoders import check_encoder, encoder_inputs
from kalbert.tasks.qa import label_window, make_windows
from kalbert.training import LoopConfig

REPO = Path(__file__).resolve().parents[2]
KO_VOCAB = REPO / "vocab" / "ko-32k"
CONTEXT = "대한민국의 수도는 서울특별시에 있다. 서울은 1394년 조선의 도읍이 되었다."
SENTENCE_FILES = ("modules.json", "config_sentence_transformers.json", "sentence_bert_config.json", "1_Pooling",
                  "2_Normalize")


def _need(name: str, *splits: str) -> None:
    try:
        for split in splits:
            data_path(name, split)
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")


def _e5_tokenizer():
    """The e5 export's own tokenizer builder (XLM-R ids, <s> A </s></s> B </s>, no token types) over the
    Korean vocabulary's pieces, so the tiny teacher reads Korean as the real one does."""
    import sentencepiece as spm

    from kalbert.teachers.e5_file import E5File, build_tokenizer

    processor = spm.SentencePieceProcessor(model_file=str(KO_VOCAB / "spiece.model"))
    pieces = [(processor.id_to_piece(i), processor.get_score(i)) for i in range(processor.get_piece_size())
              if not (processor.is_control(i) or processor.is_unknown(i))]
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), *pieces, ("<mask>", 0.0)]
    e5 = E5File(hidden=32, layers=2, heads=2, intermediate=64, vocab_size=len(vocab), max_positions=128,
                type_vocab_size=2, eps=1e-12, pieces=vocab,
                special_ids={"bos": 0, "pad": 1, "eos": 2, "unk": 3, "mask": len(vocab) - 1},
                normalization={0x3000: [0x20]}, tensors={})
    return build_tokenizer(e5)


def _write_bert(folder: Path, tokenizer, type_vocab_size: int) -> Path:
    """A random BertModel (hidden 32, 2 layers, 2 heads, no pooler, as the e5 export) with ``tokenizer``."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, type_vocab_size=type_vocab_size,
                        pad_token_id=tokenizer.pad_token_id)
    BertModel(config, add_pooling_layer=False).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def e5_style_teacher(tmp_path_factory) -> Path:
    """A SentenceTransformer folder with its Transformer at the root, as `kalbert teacher export` writes."""
    folder = _write_bert(tmp_path_factory.mktemp("teacher") / "multilingual-e5-small", _e5_tokenizer(), 2)
    (folder / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32,
                                                                   "pooling_mode_mean_tokens": True}))
    (folder / "2_Normalize").mkdir()
    (folder / "config_sentence_transformers.json").write_text(json.dumps({"default_prompt_name": "query"}))
    (folder / "kalbert.json").write_text(json.dumps({"kind": "teacher", "languages": ["multilingual"]}))
    return folder


@pytest.fixture(scope="module")
def one_type_bert(tmp_path_factory) -> Path:
    """A BERT with a single token type whose (ALBERT) tokenizer gives the second segment type 1."""
    from transformers import AutoTokenizer

    return _write_bert(tmp_path_factory.mktemp("one-type") / "bert", AutoTokenizer.from_pretrained(str(KO_VOCAB)), 1)


def _gpt2(folder: Path) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "gpt2"}', encoding="utf-8")
    return folder


def _assert_plain_task_folder(out: Path, auto_class: str, architecture: str) -> dict:
    import transformers

    assert type(getattr(transformers, auto_class).from_pretrained(str(out))).__name__ == architecture
    assert transformers.AutoTokenizer.from_pretrained(str(out)).is_fast
    assert not [name for name in SENTENCE_FILES if (out / name).exists()]  # a task model, not a sentence model
    meta = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))
    assert (meta["architecture"], meta["model_type"]) == (architecture, "bert")
    card = (out / "README.md").read_text(encoding="utf-8")
    assert f"`{architecture}`" in card and "tags: [bert," in card and "Albert" not in card
    return meta


# ----------------------------------------------------------------------------------------------- encoders
def test_only_albert_and_bert_folders_are_accepted(tmp_path):
    for model_type in ("albert", "bert"):
        (tmp_path / model_type).mkdir()
        (tmp_path / model_type / "config.json").write_text(json.dumps({"model_type": model_type}))
        assert check_encoder(tmp_path / model_type, "fine-tuning") == tmp_path / model_type
    with pytest.raises(KalbertError, match="'gpt2' model, not one of albert, bert"):
        check_encoder(_gpt2(tmp_path / "gpt2"), "fine-tuning")
    with pytest.raises(KalbertError, match="no config.json"):
        check_encoder(tmp_path / "missing", "fine-tuning")


def test_token_types_reach_only_models_with_room_for_them(e5_style_teacher, one_type_bert):
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(one_type_bert))
    batch = dict(tokenizer(["수도는?"], [CONTEXT], return_tensors="pt"))
    assert batch["token_type_ids"].max() == 1
    one_type = AutoModel.from_pretrained(str(one_type_bert)).eval()
    with pytest.raises(IndexError):
        one_type(**batch)
    assert "token_type_ids" not in encoder_inputs(one_type, batch)
    with torch.no_grad():
        one_type(**encoder_inputs(one_type, batch))
    assert encoder_inputs(AutoModel.from_pretrained(str(e5_style_teacher)), batch) is batch


def test_xlmr_windows_label_exact_answers_and_count_four_specials(e5_style_teacher):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(e5_style_teacher))
    (window,) = make_windows(tokenizer, ["수도는?"], [CONTEXT])
    assert tokenizer.convert_ids_to_tokens(window.input_ids)[:1] == ["<s>"]
    for answer in ("서울특별시", "1394년", "조선"):
        start = CONTEXT.index(answer)
        label_window(window, start, start + len(answer))
        assert CONTEXT[window.spans[window.start][0] : window.spans[window.end][1]] == answer  # no leading space
    question = len(tokenizer("수도는?", add_special_tokens=False)["input_ids"])
    room = 32 - 4 - question  # <s> q </s></s> c </s>
    assert make_windows(tokenizer, ["수도는?"], [CONTEXT * 3], max_seq_length=32, doc_stride=room - 1)
    with pytest.raises(KalbertError, match=f"use a doc stride below {room}"):
        make_windows(tokenizer, ["수도는?"], [CONTEXT * 3], max_seq_length=32, doc_stride=room)


# ------------------------------------------------------------------------------------------------ training
def _qa_train(model: str, out: Path) -> list[str]:
    return ["qa", "train", "--model", model, "--task", "korquad", "--out", str(out), "--epochs", "1",
            "--batch-size", "64", "--max-seq-length", "128", "--doc-stride", "32", "--max-rows", "4",
            "--max-eval-rows", "2", "--precision", "fp32"]


@pytest.mark.parametrize("teacher", ["e5_style_teacher", "one_type_bert"])
def test_qa_train_from_a_bert_writes_a_plain_qa_folder(teacher, request, tmp_path, capsys):
    _need("korquad", "train", "val", "test")
    out = tmp_path / "qa"
    assert main(_qa_train(str(request.getfixturevalue(teacher)), out)) == 0
    meta = _assert_plain_task_folder(out, "AutoModelForQuestionAnswering", "BertForQuestionAnswering")
    assert meta["train_questions"] == 4 and [h["epoch"] for h in meta["history"]] == [1]
    capsys.readouterr()
    assert main(["qa", "predict", "--model", str(out), "--context", CONTEXT, "--question", "수도는?"]) == 0
    answer, _ = capsys.readouterr().out.splitlines()
    assert answer in CONTEXT


def test_the_teacher_name_resolves_to_the_exported_folder(e5_style_teacher, monkeypatch, tmp_path):
    _need("korquad", "train", "val", "test")
    monkeypatch.setattr("kalbert.tasks.encoders.e5_folder", lambda: e5_style_teacher)
    assert main(_qa_train("multilingual-e5-small", tmp_path / "qa")) == 0
    meta = json.loads((tmp_path / "qa" / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["config"]["model"] == "multilingual-e5-small" and "--model multilingual-e5-small" in meta["command"]
    assert [p["path"] for p in meta["parents"]] == [str(e5_style_teacher)] and meta["languages"] == ["multilingual"]


@pytest.mark.parametrize("teacher", ["e5_style_teacher", "one_type_bert"])
def test_mc_train_from_a_bert_writes_a_plain_mc_folder(teacher, request, tmp_path):
    _need("kobest-copa", "train", "dev", "test")
    out = tmp_path / "mc"
    summary = train_mc(MCTrainConfig(model=str(request.getfixturevalue(teacher)), task="kobest-copa", out=str(out),
                                     max_rows=8, max_eval_rows=4,
                                     loop=LoopConfig(epochs=1, batch_size=8, precision="fp32")))
    assert summary["report"]["n"] == 4 and summary["selected_epoch"] == 1
    _assert_plain_task_folder(out, "AutoModelForMultipleChoice", "BertForMultipleChoice")
    probs = predict_mc(out, "전쟁이 시작되었다.", ["병사들이 집으로 돌아왔다.", "병사들이 전투에 파견되었다."],
                       question="결과")
    assert sum(probs) == pytest.approx(1.0)


def test_other_model_types_are_one_line_errors(tmp_path, capsys):
    gpt2 = str(_gpt2(tmp_path / "gpt2"))
    for argv in (["qa", "train", "--task", "korquad"], ["mc", "train", "--task", "kobest-copa"]):
        assert main([*argv, "--model", gpt2, "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err.strip()
        assert "holds a 'gpt2' model, not one of albert, bert" in err and len(err.splitlines()) == 1
