"""`kalbert transplant`: exactness at E = H, the shape and loadability of the output, and its errors.

Everything is built here in seconds: tiny SentencePiece vocabularies trained on generated sentences
and tiny random BERT / XLM-R teachers (random LayerNorm gains and biases, so the LayerNorm mapping is
really exercised).
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
import sentencepiece as spm
import torch

from kalbert.cli.main import main
from kalbert.pretrain.config import TransplantConfig
from kalbert.transplant import choose_layers, map_pieces, transplant
from kalbert.vocab.files import SPECIAL_TOKENS, SPIECE, write_vocab_files

HIDDEN, LAYERS, HEADS, FFN, POSITIONS = 32, 4, 4, 64, 64
PROBE = (["배우들의 연기도 좋았다.", "一架飞机正在起飞。", "학생들이 학교에 갔다."],
         ["영화가 재미있었다.", "我们在学校学习。", "A plane is taking off."])


def _sentences(seed: int = 0, n: int = 400) -> list[str]:
    rng = random.Random(seed)
    ko_nouns = ["배우", "영화", "학생", "학교", "비행기", "친구", "음식", "도시", "사람", "책"]
    ko_tails = ["들의", "가", "는", "를", "에", "에서", "도", "와"]
    ko_verbs = ["좋았다", "갔다", "재미있었다", "읽었다", "먹었다", "왔다", "떠났다"]
    zh = "我们在学校学习中文一架飞机正在起飞今天天气很好朋友城市吃饭看书"
    en = ["a", "plane", "is", "taking", "off", "the", "students", "went", "to", "school"]
    lines = []
    for _ in range(n):
        ko = " ".join(rng.choice(ko_nouns) + rng.choice(ko_tails) for _ in range(rng.randint(1, 3)))
        lines.append(f"{ko} {rng.choice(ko_verbs)}.")
        lines.append("".join(rng.choice(zh) for _ in range(rng.randint(4, 10))) + "。")
        lines.append(" ".join(rng.choice(en) for _ in range(rng.randint(3, 6))) + ".")
    return lines


def _train(sentences: list[str], vocab_size: int, **ids) -> bytes:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=model, vocab_size=vocab_size,
                                   model_type="unigram", hard_vocab_limit=False, minloglevel=2, num_threads=1,
                                   **ids)
    return model.getvalue()


def _kalbert_vocab(folder: Path, sentences: list[str], vocab_size: int) -> Path:
    """A vocab folder as `kalbert vocab build` lays it out (ALBERT special ids 0-4)."""
    folder.mkdir(parents=True)
    write_vocab_files(folder, _train(sentences, vocab_size, pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
                                     control_symbols=list(SPECIAL_TOKENS[2:])))
    (folder / "kalbert.json").write_text(json.dumps({"kind": "vocab", "languages": ["ko", "zh"]}), encoding="utf-8")
    return folder


def _xlmr_tokenizer(sentences: list[str], vocab_size: int):
    """An e5-style teacher tokenizer: XLM-R special layout, unigram pieces, metaspace pre-tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    processor = spm.SentencePieceProcessor(model_proto=_train(sentences, vocab_size))  # <unk>=0 <s>=1 </s>=2
    pieces = [(processor.id_to_piece(i), processor.get_score(i)) for i in range(3, processor.get_piece_size())]
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), *pieces, ("<mask>", 0.0)]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=3, byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", cls_token="<s>",
                                   sep_token="</s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")


def _teacher(folder: Path, tokenizer, model_type: str = "bert", seed: int = 0, sentence_transformer: bool = False):
    """A random BERT (or XLM-R) saved with ``tokenizer``; as a SentenceTransformer folder if asked."""
    from transformers import BertConfig, BertModel, XLMRobertaConfig, XLMRobertaModel

    torch.manual_seed(seed)
    shape = dict(vocab_size=len(tokenizer), hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                 intermediate_size=FFN, hidden_act="gelu", pad_token_id=tokenizer.pad_token_id)
    if model_type == "bert":
        model = BertModel(BertConfig(max_position_embeddings=POSITIONS, type_vocab_size=2, **shape))
    else:  # positions start at pad + 1; one token type, as XLM-R
        model = XLMRobertaModel(XLMRobertaConfig(max_position_embeddings=POSITIONS + tokenizer.pad_token_id + 1,
                                                 type_vocab_size=1, **shape))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "LayerNorm.weight" in name:
                param.copy_(1 + 0.3 * torch.randn_like(param))
            elif "LayerNorm.bias" in name:
                param.copy_(0.1 * torch.randn_like(param))
            elif name.startswith("embeddings."):  # larger than init, so that the embedding sum matters
                param.copy_(0.5 * torch.randn_like(param))
    model_dir = folder / "0_Transformer" if sentence_transformer else folder
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    if sentence_transformer:
        modules = [{"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
        (folder / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    return model.eval()


@pytest.fixture(scope="module")
def vocab(tmp_path_factory) -> Path:
    return _kalbert_vocab(tmp_path_factory.mktemp("vocab") / "ko-zh", _sentences(0), 150)


@pytest.fixture(scope="module")
def e5_style_teacher(tmp_path_factory) -> Path:
    """A BERT teacher with its own XLM-R-layout vocabulary (trained without Chinese: some pieces are <unk>)."""
    folder = tmp_path_factory.mktemp("teacher") / "e5-style"
    sentences = [s for s in _sentences(1) if not s.endswith("。")]
    _teacher(folder, _xlmr_tokenizer(sentences, 120), sentence_transformer=True)
    return folder


def _probe(tokenizer) -> dict[str, torch.Tensor]:
    return tokenizer(*PROBE, padding=True, return_tensors="pt")


# ------------------------------------------------------------------------------------------ exactness
@pytest.mark.parametrize("model_type", ["bert", "xlm-roberta"])
def test_own_vocabulary_at_full_width_reproduces_the_teacher(tmp_path, vocab, model_type):
    from transformers import AlbertModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(vocab))
    teacher = _teacher(tmp_path / "teacher", tokenizer, model_type)
    out = tmp_path / "albert"
    result = transplant(TransplantConfig(teacher=str(tmp_path / "teacher"), vocab=str(vocab), out=str(out),
                                         layers=LAYERS, embedding_size=HIDDEN))
    assert result.identity_vocab and result.teacher_layers == [0, 1, 2, 3]
    assert result.variance_kept["all"] == pytest.approx(1.0)
    albert = AlbertModel.from_pretrained(str(out)).eval()
    batch = _probe(tokenizer)
    assert batch["token_type_ids"].max() == 1 and batch["attention_mask"].min() == 0  # pairs and padding
    teacher_batch = dict(batch, token_type_ids=torch.zeros_like(batch["token_type_ids"])) \
        if model_type != "bert" else batch
    with torch.no_grad():
        theirs = teacher(**teacher_batch).last_hidden_state
        ours = albert(**teacher_batch).last_hidden_state
    real = batch["attention_mask"].bool()
    assert (ours[real] - theirs[real]).abs().max() < 1e-4


def test_shared_groups_average_consecutive_layers(tmp_path, vocab):
    from transformers import AlbertModel, AutoTokenizer

    teacher = _teacher(tmp_path / "teacher", AutoTokenizer.from_pretrained(str(vocab)))
    out = tmp_path / "albert"
    transplant(TransplantConfig(teacher=str(tmp_path / "teacher"), vocab=str(vocab), out=str(out), layers=4,
                                embedding_size=8, share_groups=2))
    albert = AlbertModel.from_pretrained(str(out))
    assert albert.config.num_hidden_groups == 2 and albert.config.num_hidden_layers == 4
    group = albert.encoder.albert_layer_groups[1].albert_layers[0]
    layers = teacher.encoder.layer
    expected = (layers[2].intermediate.dense.weight + layers[3].intermediate.dense.weight) / 2
    assert torch.allclose(group.ffn.weight, expected)


def test_layer_choices():
    assert choose_layers(12, 6, "every-other") == [1, 3, 5, 7, 9, 11]
    assert choose_layers(12, 4, "every-other") == [2, 5, 8, 11]
    assert choose_layers(12, 12, "every-other") == list(range(12))
    assert choose_layers(12, 3, "first") == [0, 1, 2]
    assert choose_layers(12, 3, "last") == [9, 10, 11]


def test_pieces_map_to_word_starts_continuations_and_specials():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    teacher_pieces = ["<s>", "<pad>", "</s>", "<unk>", "▁", "▁학교", "학교", "▁에", "에", "▁학", "교", "<mask>"]
    backend = Tokenizer(models.Unigram([(p, -1.0) for p in teacher_pieces], unk_id=3, byte_fallback=False))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", cls_token="<s>",
                                        sep_token="</s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")
    ours = [*SPECIAL_TOKENS, "▁학교", "학교", "에", "▁", "中", "교에"]
    processor = SimpleNamespace(get_piece_size=lambda: len(ours), id_to_piece=lambda i: ours[i])
    mapping = map_pieces(processor, tokenizer)
    teacher_id = teacher_pieces.index
    assert mapping.ids[:5] == [[1], [3], [0], [2], [teacher_id("<mask>")]]
    assert mapping.ids[5:] == [[teacher_id("▁학교")], [teacher_id("학교")], [teacher_id("에")], [teacher_id("▁")],
                               [3], [teacher_id("교"), teacher_id("에")]]
    assert mapping.counts == {"single": 9, "several": 1, "unk": 1} and not mapping.identity


# ---------------------------------------------------------------------------------------- the output
def test_kalbert_vocabulary_output_loads_everywhere(tmp_path, vocab, e5_style_teacher, capsys):
    from transformers import AlbertForPreTraining, AlbertModel, AutoModel

    from kalbert.pretrain.config import PretrainConfig
    from kalbert.pretrain.trainer import _initial_model
    from kalbert.sentence import encode, load_sentence_model
    from kalbert.sentence.export import check_checkpoint

    out = tmp_path / "albert"
    assert main(["transplant", "--teacher", str(e5_style_teacher), "--vocab", str(vocab), "--layers", "2",
                 "--embedding-size", "8", "--out", str(out)]) == 0
    assert "teacher layers: 1, 3" in capsys.readouterr().out
    model = AutoModel.from_pretrained(str(out))
    assert isinstance(model, AlbertModel)
    pieces = spm.SentencePieceProcessor(model_file=str(vocab / SPIECE)).get_piece_size()
    e, h = 8, HIDDEN
    layer = 4 * (h * h + h) + 2 * h + (h * FFN + FFN) + (FFN * h + h) + 2 * h
    embeddings = (pieces + POSITIONS + 2) * e + 2 * e + (e * h + h)
    assert sum(p.numel() for p in model.parameters()) == embeddings + 2 * layer + (h * h + h)

    meta = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["kind"] == "pretrained-model" and meta["languages"] == ["ko", "zh"]
    info = meta["transplant"]
    counts = info["vocab_mapping"]
    assert counts["single"] + counts["several"] + counts["unk"] == pieces and counts["unk"] > 0
    assert not counts["identity"] and info["teacher_layers_used"] == [1, 3]
    assert all(0 < share <= 1 + 1e-9 for share in info["variance_kept"].values())
    assert "teacher layers used" in (out / "README.md").read_text(encoding="utf-8")

    check_checkpoint(out)
    sentence_model = load_sentence_model(out)
    assert encode(sentence_model, list(PROBE[0])).shape == (3, HIDDEN)

    heads = AlbertForPreTraining.from_pretrained(str(out))
    assert torch.equal(heads.get_output_embeddings().weight, heads.get_input_embeddings().weight)
    batch = sentence_model.tokenizer(*PROBE, padding=True, return_tensors="pt")
    loss = heads(**batch, labels=batch["input_ids"], sentence_order_label=torch.tensor([0, 1, 0])).loss
    assert torch.isfinite(loss)

    data = SimpleNamespace(vocab_size=pieces, vocab_dir=vocab, vocab_sha256=json.loads(
        (out / "kalbert.json").read_text(encoding="utf-8"))["vocab_sha256"])
    further = _initial_model(PretrainConfig(data="unused", out="unused", init_from=str(out)), data)
    assert further.config.embedding_size == 8


# ------------------------------------------------------------------------------------------- errors
def _fails(capsys, out: Path, *argv: str) -> str:
    assert main(["transplant", *argv, "--out", str(out)]) == 2
    assert not out.exists() and not list(out.parent.glob(f".{out.name}.*"))
    err = capsys.readouterr().err
    assert err.startswith("kalbert: error:") and err.strip().count("\n") == 0, err
    return err


def test_bad_inputs_are_one_line_errors(tmp_path, vocab, e5_style_teacher, capsys):
    out = tmp_path / "out"
    shape = ["--layers", "2", "--embedding-size", "8"]  # valid; each case below overrides one
    ok = ["--teacher", str(e5_style_teacher), "--vocab", str(vocab), *shape]
    gpt = tmp_path / "gpt"
    gpt.mkdir()
    (gpt / "config.json").write_text(json.dumps({"model_type": "gpt2"}), encoding="utf-8")
    assert "not a BERT-family encoder" in _fails(capsys, out, "--teacher", str(gpt), "--vocab", str(vocab), *shape)
    plain = tmp_path / "plain-vocab"
    plain.mkdir()
    (plain / SPIECE).write_bytes(_train(_sentences(2), 100))
    assert "ALBERT needs" in _fails(capsys, out, *ok, "--vocab", str(plain))
    assert "the teacher has 4 layers" in _fails(capsys, out, *ok, "--layers", "5")
    assert "--embedding-size 64" in _fails(capsys, out, *ok, "--embedding-size", "64")
    assert "--embedding-size 1" in _fails(capsys, out, *ok, "--embedding-size", "1")
    assert "does not divide" in _fails(capsys, out, *ok, "--layers", "4", "--share-groups", "3")
    assert "not found" in _fails(capsys, out, *ok, "--teacher", str(tmp_path / "nope"))


def test_existing_output_needs_overwrite(tmp_path, vocab, e5_style_teacher, capsys):
    out = tmp_path / "out"
    out.mkdir()
    argv = ["transplant", "--teacher", str(e5_style_teacher), "--vocab", str(vocab), "--layers", "1",
            "--embedding-size", "4", "--out", str(out)]
    assert main(argv) == 2 and "already exists" in capsys.readouterr().err
    assert main([*argv, "--overwrite"]) == 0 and (out / "config.json").is_file()


def test_help_has_an_example(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["transplant", "--help"])
    assert exited.value.code == 0
    assert "example:\n  kalbert transplant --teacher" in capsys.readouterr().out


# --------------------------------------------------------------------------- widening a sentence model
@pytest.fixture(scope="module")
def narrow_sentence_model(tmp_path_factory, vocab, e5_style_teacher) -> Path:
    """The e5-style teacher transplanted at E = 8 of H = 32 and wrapped as a sentence model."""
    folder = tmp_path_factory.mktemp("narrow")
    assert main(["transplant", "--teacher", str(e5_style_teacher), "--vocab", str(vocab), "--layers", "2",
                 "--embedding-size", "8", "--out", str(folder / "albert")]) == 0
    assert main(["sbert", "export", "--model", str(folder / "albert"), "--out", str(folder / "sbert")]) == 0
    return folder / "sbert"


def _vectors(folder: Path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu", local_files_only=True).encode(
        list(PROBE[0] + PROBE[1]), convert_to_tensor=True, normalize_embeddings=True)


def test_widening_keeps_the_model_at_alpha_0_and_reads_the_teacher_at_1(tmp_path, narrow_sentence_model,
                                                                        e5_style_teacher, capsys):
    from transformers import AutoConfig

    before = _vectors(narrow_sentence_model)
    outs = {}
    for alpha in ("0", "1"):
        outs[alpha] = tmp_path / f"wide-{alpha}"
        assert main(["sbert", "widen", "--model", str(narrow_sentence_model), "--teacher", str(e5_style_teacher),
                     "--embedding-size", "20", "--alpha", alpha, "--out", str(outs[alpha])]) == 0
    assert "variance kept" in capsys.readouterr().out
    assert AutoConfig.from_pretrained(str(outs["0"])).embedding_size == 20
    kept = (before * _vectors(outs["0"])).sum(1)
    moved = (before * _vectors(outs["1"])).sum(1)
    assert kept.min() > 0.99 and moved.min() < kept.min()  # alpha 0: (nearly) the same model; 1: the teacher's part
    meta = json.loads((outs["1"] / "kalbert.json").read_text(encoding="utf-8"))
    stage = meta["stages"][-1]
    assert stage["stage"] == "widen" and stage["config"]["embedding_size"] == 20
    assert 0 < stage["variance_kept"]["before"] < stage["variance_kept"]["after"] <= 1 + 1e-9
    assert meta["command"].startswith("kalbert sbert widen")


def test_widening_with_no_position_spread_is_exact():
    """With one position row and one type row the LayerNorm statistics are kept exactly, so at alpha 0 the
    widened embeddings give the encoder the very input it had."""
    from transformers import AlbertConfig, AlbertModel

    from kalbert.sentence.widen import widen_state

    torch.manual_seed(0)
    narrow = AlbertModel(AlbertConfig(vocab_size=50, embedding_size=6, hidden_size=HIDDEN, num_hidden_layers=1,
                                      num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=8))
    state = narrow.state_dict()
    for name in ("position_embeddings", "token_type_embeddings"):
        table = state[f"embeddings.{name}.weight"]
        state[f"embeddings.{name}.weight"] = table[:1].expand_as(table).clone()
    narrow.load_state_dict(state)
    widened = widen_state(state, torch.randn(50, HIDDEN), torch.ones(HIDDEN), embedding_size=16, alpha=0.0)
    wide = AlbertModel(AlbertConfig(**{**narrow.config.to_dict(), "embedding_size": 16}))
    wide.load_state_dict(widened.state)
    ids = torch.randint(5, 50, (2, 7))
    with torch.no_grad():
        assert torch.allclose(narrow.eval()(ids).last_hidden_state, wide.eval()(ids).last_hidden_state, atol=1e-5)


def test_widening_refuses_bad_widths_and_models(tmp_path, narrow_sentence_model, vocab, capsys):
    model = ["--model", str(narrow_sentence_model)]
    for argv, says in (([*model, "--embedding-size", "8"], "must be above the model's 8"),
                       ([*model, "--embedding-size", "40"], "at most its hidden size"),
                       ([*model, "--alpha", "2"], "outside 0..1"),
                       (["--model", str(vocab)], "is a vocab folder; --model takes a sentence model folder")):
        out = tmp_path / "wide"
        assert main(["sbert", "widen", *argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert says in err and err.strip().count("\n") == 0 and not out.exists(), err
