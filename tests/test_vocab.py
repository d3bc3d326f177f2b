"""Vocabulary build, extend and inspect: ALBERT ids, NFC text, pieces that respect morpheme boundaries."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AlbertConfig, AlbertModel, AutoTokenizer

from kalbert.errors import KalbertError
from kalbert.text import make_segmenter
from kalbert.vocab import (
    VocabBuildConfig,
    VocabExtendConfig,
    build_vocab,
    extend_vocab,
    grow_embeddings,
    load_processor,
)
from kalbert.vocab.files import SPECIAL_TOKENS
from kalbert.vocab.stats import measure_vocab

KO_SENTENCES = [
    "배우들의 연기도 좋았고 영화가 정말 재미있었다.",
    "대한민국의 수도는 서울특별시이다.",
    "그는 2016년에 회사를 세웠다.",
]
ZH_SENTENCES = ["我们是朋友，你呢？", "这部电影非常好看。", "第一条 为了保护消费者的合法权益，制定本法。"]


def test_folder_loads_with_plain_autotokenizer(ko_vocab):
    tokenizer = AutoTokenizer.from_pretrained(str(ko_vocab))
    assert tokenizer.convert_ids_to_tokens(list(range(5))) == list(SPECIAL_TOKENS)
    pair = tokenizer("배우들의 연기도", "좋았다")
    assert pair["input_ids"][0] == 2 and pair["input_ids"][-1] == 3
    assert set(pair["token_type_ids"]) == {0, 1}
    assert {"spiece.model", "spiece.vocab", "tokenizer.json", "kalbert.json", "README.md"} <= {
        p.name for p in ko_vocab.iterdir()
    }


@pytest.mark.parametrize(("vocab_fixture", "sentences"), [("ko_vocab", KO_SENTENCES), ("zh_vocab", ZH_SENTENCES)])
def test_no_unk_and_exact_round_trip(request, vocab_fixture, sentences):
    folder = request.getfixturevalue(vocab_fixture)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    processor = load_processor(folder)
    for sentence in sentences:
        ids = tokenizer(sentence, add_special_tokens=False)["input_ids"]
        assert ids == processor.encode(sentence), "HF tokenizer and SentencePiece disagree"
        assert tokenizer.unk_token_id not in ids
        assert tokenizer.decode(ids) == sentence


def test_morph_aware_pieces_respect_analyzer_boundaries(ko_vocab, ko_corpus, tmp_path):
    plain = build_vocab(
        VocabBuildConfig(lang="ko", inputs=[str(ko_corpus)], out=str(tmp_path / "plain"), vocab_size=5000,
                         segmenter="none", processes=1)
    )
    sentences = [line for line in ko_corpus.read_text(encoding="utf-8").splitlines() if line][-300:]
    segmenter = make_segmenter("ko")
    aware = measure_vocab(load_processor(ko_vocab), sentences, segmenter)
    baseline = measure_vocab(load_processor(plain), sentences, segmenter)
    assert aware.boundary_crossing < 0.02
    assert aware.boundary_crossing < baseline.boundary_crossing / 3
    assert aware.unk_rate < 0.005


def test_card_and_metadata_record_the_build(ko_vocab):
    meta = json.loads((ko_vocab / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["segmenter"] == "mecab" and meta["languages"] == ["ko"]
    assert meta["inputs"][0]["sha256"]
    assert "python-mecab-ko" in meta["segmenter_versions"]
    card = (ko_vocab / "README.md").read_text(encoding="utf-8")
    assert "kalbert vocab build --lang ko" in card and "UNK rate" in card


def test_ko_zh_vocab_balances_languages(ko_corpus, zh_corpus, tmp_path):
    out = build_vocab(
        VocabBuildConfig(lang="ko+zh", inputs=[str(ko_corpus), str(zh_corpus)], out=str(tmp_path / "mix"),
                         vocab_size=10000, max_sentences=4000, processes=1)
    )
    meta = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))
    assert set(meta["sentences_trained"]) == {"ko", "zh"}
    processor = load_processor(out)
    for sentence in KO_SENTENCES[:2] + ZH_SENTENCES[:2]:
        assert processor.unk_id() not in processor.encode(sentence)


def test_bad_inputs_fail_cleanly_without_output(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    broken = tmp_path / "cp949.txt"
    broken.write_bytes("배우들의 연기".encode("cp949"))
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("배우들의 연기도 좋았다.\n영화가 재미있었다.\n", encoding="utf-8")
    cases = [
        (empty, 5000, "empty"),
        (broken, 5000, "not valid UTF-8"),
        (tmp_path / "missing.txt", 5000, "not found|does not exist"),
        (tiny, 50000, "--vocab-size"),
    ]
    for source, size, message in cases:
        out = tmp_path / f"out-{source.stem}"
        with pytest.raises(KalbertError, match=message):
            build_vocab(VocabBuildConfig(lang="ko", inputs=[str(source)], out=str(out), vocab_size=size, processes=1))
        assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_extend_keeps_old_ids_and_adds_single_pieces(ko_vocab, tmp_path):
    words = tmp_path / "words.txt"
    old = load_processor(ko_vocab)
    present = next(
        p[1:] for p in map(old.id_to_piece, range(5, old.get_piece_size())) if p.startswith("▁") and len(p) > 2
    )
    words.write_text(f"넷플릭스\n블록버스터\n{present}\n", encoding="utf-8")
    out, extension = extend_vocab(VocabExtendConfig(base=str(ko_vocab), out=str(tmp_path / "ext"), words=str(words)))
    new = load_processor(out)
    assert all(new.id_to_piece(i) == old.id_to_piece(i) for i in range(old.get_piece_size()))
    assert new.get_piece_size() == old.get_piece_size() + len(extension.added)
    assert new.encode("넷플릭스", out_type=str) == ["▁넷플릭스"]
    assert len(extension.before["넷플릭스"]) > 1
    assert extension.skipped_present == [present]
    # neighbouring text is untouched where the new pieces do not apply
    assert new.encode("배우들의 연기도") == old.encode("배우들의 연기도")
    assert AutoTokenizer.from_pretrained(str(out)).tokenize("넷플릭스가") == ["▁넷플릭스", "가"]


def test_extend_rejects_bad_base_and_known_words(ko_vocab, tmp_path):
    not_a_model = tmp_path / "fake"
    not_a_model.mkdir()
    (not_a_model / "spiece.model").write_bytes(b"definitely not a protobuf \xff\xfe")
    words = tmp_path / "words.txt"
    words.write_text("넷플릭스\n", encoding="utf-8")
    with pytest.raises(KalbertError, match="not a SentencePiece model"):
        extend_vocab(VocabExtendConfig(base=str(not_a_model), out=str(tmp_path / "o1"), words=str(words)))
    first, _ = extend_vocab(VocabExtendConfig(base=str(ko_vocab), out=str(tmp_path / "o2"), words=str(words)))
    with pytest.raises(KalbertError, match="already pieces"):
        extend_vocab(VocabExtendConfig(base=str(first), out=str(tmp_path / "o3"), words=str(words)))
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o3").exists()


def test_extend_from_corpus_mines_frequent_words(ko_vocab, ko_corpus, tmp_path):
    out, extension = extend_vocab(
        VocabExtendConfig(base=str(ko_vocab), out=str(tmp_path / "mined"), from_corpus=[str(ko_corpus)], max_new=20)
    )
    assert 0 < len(extension.added) <= 20
    new = load_processor(out)
    pieces = [new.encode(word, out_type=str) for word in extension.added]
    assert sum(len(p) == 1 for p in pieces) >= 0.9 * len(pieces)


def test_grow_embeddings_uses_old_subpiece_mean(ko_vocab, tmp_path):
    words = tmp_path / "words.txt"
    words.write_text("넷플릭스\n", encoding="utf-8")
    out, _ = extend_vocab(VocabExtendConfig(base=str(ko_vocab), out=str(tmp_path / "ext"), words=str(words)))
    old = load_processor(ko_vocab)
    torch.manual_seed(0)
    model = AlbertModel(AlbertConfig(vocab_size=old.get_piece_size(), embedding_size=16, hidden_size=32,
                                     num_hidden_layers=1, num_attention_heads=2, intermediate_size=64))
    before = model.get_input_embeddings().weight.detach().clone()
    assert grow_embeddings(model, ko_vocab, out) == 1
    after = model.get_input_embeddings().weight.detach()
    assert torch.equal(after[: old.get_piece_size()], before)
    sub_ids = [i for i in old.encode(" 넷플릭스") if i != old.piece_to_id("▁")]
    assert torch.allclose(after[-1], before[sub_ids].mean(dim=0))
    with pytest.raises(KalbertError, match="embedding rows"):
        grow_embeddings(model, ko_vocab, out)
