"""Traditional Chinese read natively: a Traditional -> Simplified map in the normalizer, ids never moved."""

from __future__ import annotations

import json

import pytest
from sentencepiece import sentencepiece_model_pb2 as sp_pb2
from transformers import AutoTokenizer

from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.vocab import VocabBuildConfig, build_vocab, load_processor
from kalbert.vocab.config import VocabNormalizeConfig
from kalbert.vocab.files import load_model_proto
from kalbert.vocab.normalize import normalize_folder
from kalbert.vocab.normalizer import charsmap_sha256

TRADITIONAL = "這部電影非常好看，我們會再來。"
SIMPLIFIED = "这部电影非常好看，我们会再来。"
KOREAN = ["배우들의 연기도 좋았고 영화가 정말 재미있었다.", "대한민국의 수도는 서울특별시이다."]


def _pieces(proto: sp_pb2.ModelProto) -> list[tuple[str, float, int]]:
    return [(p.piece, p.score, p.type) for p in proto.pieces]


@pytest.fixture(scope="module")
def zh_t2s(zh_vocab, tmp_path_factory):
    out, _ = normalize_folder(VocabNormalizeConfig(folder=str(zh_vocab), out=str(tmp_path_factory.mktemp("t2s") / "v")))
    return out


def test_pieces_and_ids_unchanged(zh_vocab, zh_t2s):
    old, new = load_model_proto(zh_vocab), load_model_proto(zh_t2s)
    assert _pieces(new) == _pieces(old)
    assert new.normalizer_spec.precompiled_charsmap != old.normalizer_spec.precompiled_charsmap
    assert AutoTokenizer.from_pretrained(str(zh_t2s)).get_vocab() == AutoTokenizer.from_pretrained(
        str(zh_vocab)).get_vocab()


def test_traditional_reads_as_simplified_in_spm_and_hf(zh_vocab, zh_t2s):
    old, new = load_processor(zh_vocab), load_processor(zh_t2s)
    assert old.unk_id() in old.encode(TRADITIONAL)
    assert new.encode(TRADITIONAL) == old.encode(SIMPLIFIED)
    tokenizer = AutoTokenizer.from_pretrained(str(zh_t2s))
    encoded = tokenizer(TRADITIONAL, add_special_tokens=False, return_offsets_mapping=True)
    assert encoded["input_ids"] == new.encode(TRADITIONAL)
    # offsets point into the original Traditional text, so extracted answers stay Traditional
    assert TRADITIONAL[slice(*encoded["offset_mapping"][-1])] == "。"


def test_simplified_and_korean_text_keep_their_ids(zh_vocab, zh_t2s, zh_corpus, ko_corpus):
    old, new = load_processor(zh_vocab), load_processor(zh_t2s)
    tokenizer = AutoTokenizer.from_pretrained(str(zh_t2s))
    lines = [line for line in zh_corpus.read_text(encoding="utf-8").splitlines() if line][:1500]
    lines += [line for line in ko_corpus.read_text(encoding="utf-8").splitlines() if line][:300] + KOREAN
    for line in lines:
        ids = old.encode(line)
        if old.unk_id() not in ids:  # only what the vocabulary could not read may change
            assert new.encode(line) == ids, line
            assert tokenizer(line, add_special_tokens=False)["input_ids"] == ids, line


def test_record_and_card_name_the_normalizer(zh_vocab, zh_t2s):
    meta = json.loads((zh_t2s / "kalbert.json").read_text(encoding="utf-8"))
    normalizer = meta["normalizer"]
    assert meta["kind"] == "vocab" and normalizer["version"] == 2 and normalizer["parent"] == str(zh_vocab)
    assert normalizer["traditional_to_simplified"] == "unknown" and normalizer["characters_mapped"] > 1000
    charsmap = load_model_proto(zh_t2s).normalizer_spec.precompiled_charsmap
    assert normalizer["charsmap_sha256"] == charsmap_sha256(charsmap)
    assert "Traditional -> Simplified" in meta["normalization"]
    assert meta["parents"][-1]["path"] == str(zh_vocab)
    card = (zh_t2s / "README.md").read_text(encoding="utf-8")
    assert card.startswith("# kalbert vocabulary") and "## Normalizer version 2" in card
    assert "kalbert vocab normalize" in card


def test_scope_all_also_maps_characters_the_vocabulary_has(zh_vocab, zh_t2s, tmp_path):
    # 後 is a GB 2312 character, so every Chinese vocabulary has a piece for it
    old = load_processor(zh_vocab)
    assert old.unk_id() not in old.encode("之後")
    assert load_processor(zh_t2s).encode("之後") == old.encode("之後")
    out, normalizer = normalize_folder(VocabNormalizeConfig(folder=str(zh_t2s), out=str(tmp_path / "all"),
                                                            traditional_to_simplified="all"))
    assert normalizer["version"] == 3
    assert load_processor(out).encode("之後") == old.encode("之后")
    # Simplified text that uses 著 and 乾 (GB 2312) is never rewritten
    assert load_processor(out).encode("著作权与乾隆") == old.encode("著作权与乾隆")


def test_sentence_transformer_folder_reads_traditional(zh_vocab, make_tiny_albert, tmp_path):
    from sentence_transformers import SentenceTransformer

    from kalbert.sentence.export import ExportConfig, export_sentence_model

    albert = make_tiny_albert(tmp_path / "albert", zh_vocab, head="AlbertModel", max_positions=64, languages=["zh"])
    sbert = export_sentence_model(ExportConfig(model=str(albert), out=str(tmp_path / "sbert"), max_seq_length=48))
    out, _ = normalize_folder(VocabNormalizeConfig(folder=str(sbert), out=str(tmp_path / "sbert-t2s")))
    assert (out / "model.safetensors").read_bytes() == (sbert / "model.safetensors").read_bytes()
    assert json.loads((out / "kalbert.json").read_text(encoding="utf-8"))["kind"] == "sentence-model"
    model = SentenceTransformer(str(out), device="cpu")
    assert "<unk>" not in model.tokenizer.tokenize(TRADITIONAL)
    traditional, simplified = model.encode([TRADITIONAL, SIMPLIFIED])
    assert traditional.tolist() == simplified.tolist()


def test_build_flag_equals_normalize_after(zh_corpus, zh_vocab, zh_t2s, tmp_path):
    out = build_vocab(VocabBuildConfig(lang="zh", inputs=[str(zh_corpus)], out=str(tmp_path / "zh-8k-t2s"),
                                       vocab_size=8000, processes=1, traditional_to_simplified="unknown"))
    built, normalized = load_model_proto(out), load_model_proto(zh_t2s)
    assert _pieces(built) == _pieces(normalized)
    assert built.normalizer_spec.precompiled_charsmap == normalized.normalizer_spec.precompiled_charsmap
    meta = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["normalizer"]["version"] == 2 and meta["config"]["traditional_to_simplified"] == "unknown"
    assert "--traditional-to-simplified unknown" in (out / "README.md").read_text(encoding="utf-8")


def test_refusals_leave_no_output(zh_vocab, zh_t2s, ko_corpus, tmp_path):
    with pytest.raises(KalbertError, match="nothing to change"):
        normalize_folder(VocabNormalizeConfig(folder=str(zh_t2s), out=str(tmp_path / "again")))
    with pytest.raises(KalbertError, match="inside"):
        normalize_folder(VocabNormalizeConfig(folder=str(zh_vocab), out=str(zh_vocab / "t2s")))
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "spiece.model").write_bytes((zh_vocab / "spiece.model").read_bytes())
    with pytest.raises(KalbertError, match="no kalbert.json"):
        normalize_folder(VocabNormalizeConfig(folder=str(bare), out=str(tmp_path / "o1")))
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for name in ("spiece.model", "kalbert.json"):
        (mixed / name).write_bytes((zh_vocab / name).read_bytes())
    (mixed / "tokenizer.json").write_bytes((zh_t2s / "tokenizer.json").read_bytes())
    with pytest.raises(KalbertError, match="normalises differently"):
        normalize_folder(VocabNormalizeConfig(folder=str(mixed), out=str(tmp_path / "o2")))
    with pytest.raises(KalbertError, match="Simplified pieces"):
        build_vocab(VocabBuildConfig(lang="ko", inputs=[str(ko_corpus)], out=str(tmp_path / "o3"),
                                     traditional_to_simplified="unknown"))
    assert not any((tmp_path / name).exists() for name in ("again", "o1", "o2", "o3"))
    assert not (zh_vocab / "t2s").exists()


def test_cli_normalize(zh_vocab, tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["vocab", "normalize", str(zh_vocab), "--out", str(out), "--traditional-to-simplified", "all"]) == 0
    assert "normalizer version 2" in capsys.readouterr().out
    assert json.loads((out / "kalbert.json").read_text(encoding="utf-8"))["command"].startswith(
        f"kalbert vocab normalize {zh_vocab}")
