"""Corpus paragraphs for passage distillation: whole paragraphs within their bounds, language-balanced like the
sentences, none holding a sentence an evaluation split scores, cached apart from the sentence sample; and the
teacher's passage view, cached apart where its document prompt is not its default one."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from kalbert.data import data_path, iter_documents, load_sts
from kalbert.errors import KalbertError
from kalbert.teachers.backends import load_teacher, with_prompt
from kalbert.teachers.corpus import CHARS, cached_sample, sample_sentences
from kalbert.text.balance import temperature_quotas
from kalbert.text.normalize import normalize_text


def test_paragraphs_are_whole_bounded_and_balanced(ko_corpus, tmp_path):
    zh = tmp_path / "zh.txt"  # the zh test corpus is titles and reviews: no paragraph of 64 characters
    zh.write_text("\n\n".join("".join(f"第{i}段的第{j}句话讲述了这座城市的历史和人民的生活。" for j in range(4))
                              for i in range(40)) + "\n", encoding="utf-8")
    sources = [str(ko_corpus), str(zh)]
    sample = sample_sentences(sources, 300, seed=3, progress=False, unit="paragraph")
    low, high = CHARS["paragraph"]
    paragraphs = {normalize_text(p) for document in iter_documents(sources) for p in document}
    assert set(sample.sentences) == {"ko", "zh"} and len(set(sample.all())) == len(sample.all())
    assert all(low <= len(p) <= high and p in paragraphs for p in sample.all())
    quotas = temperature_quotas(sample.available, 300, 2.0)
    assert {lang: len(texts) for lang, texts in sample.sentences.items()} == quotas
    assert sample_sentences(sources, 300, seed=3, progress=False, unit="paragraph").all() == sample.all()


@pytest.fixture
def leaked_test_sentence() -> str:
    """A KorSTS test sentence, which no corpus sample may hold."""
    try:
        data_path("korsts", "test")
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")
    return load_sts("korsts", "test")[0].sentence1


def _filler(count: int) -> list[str]:
    return [f"이것은 평범한 말뭉치 문단 {i}번의 첫 문장이다. 시험에 나오지 않는 둘째 문장이 뒤따른다. "
            "그리고 셋째 문장도 이 문단에 있다." for i in range(count)]


def test_a_paragraph_holding_a_test_sentence_is_left_out(tmp_path, leaked_test_sentence):
    leaked, filler = leaked_test_sentence, _filler(20)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join([f"{filler[0]} {leaked}", *filler[1:]]) + "\n", encoding="utf-8")
    sample = sample_sentences([str(corpus)], 100, progress=False, unit="paragraph")
    assert sample.heldout_dropped == 1 and sorted(sample.all()) == sorted(filler[1:])


def test_paragraph_samples_are_cached_apart_from_sentence_samples(ko_corpus, tmp_path):
    paragraphs = cached_sample([str(ko_corpus)], 50, tmp_path, unit="paragraph")
    sentences = cached_sample([str(ko_corpus)], 50, tmp_path)
    assert len(list(tmp_path.glob("sample-*.json.gz"))) == 2
    assert cached_sample([str(ko_corpus)], 50, tmp_path, unit="paragraph") == paragraphs
    assert sentences == sample_sentences([str(ko_corpus)], 50, progress=False)
    assert min(map(len, paragraphs.all())) >= CHARS["paragraph"][0]


def test_a_fresh_copy_of_the_corpus_finds_its_stored_sample(ko_corpus, tmp_path, monkeypatch):
    corpus = tmp_path / ko_corpus.name
    shutil.copyfile(ko_corpus, corpus)
    stored = cached_sample([str(corpus)], 50, tmp_path / "samples")
    os.utime(corpus, (1, 1))  # the data copied afresh: new times, same bytes
    monkeypatch.setattr("kalbert.teachers.corpus.sample_sentences", lambda *a, **k: pytest.fail("resampled"))
    assert cached_sample([str(corpus)], 50, tmp_path / "samples") == stored
    corpus.write_text(corpus.read_text(encoding="utf-8") + "새로 더한 문장이 하나 있다.\n", encoding="utf-8")
    with pytest.raises(pytest.fail.Exception, match="resampled"):
        cached_sample([str(corpus)], 50, tmp_path / "samples")


def test_the_passage_view_reads_with_the_document_prompt(st_teacher, tmp_path):
    plain = load_teacher(str(st_teacher))
    assert with_prompt(plain, "passage") is plain  # no prompts: the same vectors, the same cache
    prompted = tmp_path / "prompted"
    shutil.copytree(st_teacher, prompted)
    settings = prompted / "config_sentence_transformers.json"
    stored = json.loads(settings.read_text(encoding="utf-8"))
    stored.update(prompts={"query": "질문: ", "document": "문단: "}, default_prompt_name="query")
    settings.write_text(json.dumps(stored), encoding="utf-8")
    teacher = load_teacher(str(prompted))
    passage = with_prompt(teacher, "passage")
    assert passage.fingerprint.startswith(f"{teacher.fingerprint}-passage-") and passage.backends == ("torch",)
    assert with_prompt(teacher, "query") is teacher  # the default prompt already is the query prompt
    texts = ["한 남자가 기타를 치고 있다.", "아이들이 공원에서 축구를 하고 있다."]
    expected = teacher.model.encode_document(texts, normalize_embeddings=True)
    assert np.allclose(passage.encode(texts), expected, atol=1e-6)
    assert not np.allclose(passage.encode(texts), teacher.encode(texts), atol=1e-3)
