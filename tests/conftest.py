"""Session fixtures: small real corpora cut from ../shared/data and tiny vocabularies built from them.

Everything is built once per test session in a temp folder (tiny data roots, cut from ../shared/data, are what
training tests point KALBERT_DATA at, so that they take seconds); tests that need the shared data skip
with a clear reason when it is absent.
"""

from __future__ import annotations

import gzip
import itertools
import json
import shutil
from pathlib import Path

import pytest

from kalbert.data import data_path, get_spec
from kalbert.errors import KalbertError


def _shared_file(name: str) -> Path:
    try:
        return data_path(name)[0]
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")


def _cut(source: Path, target: Path, lines: int) -> Path:
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        target.write_text("".join(itertools.islice(handle, lines)), encoding="utf-8")
    return target


@pytest.fixture(scope="session")
def ko_corpus(tmp_path_factory) -> Path:
    """About 1.5 MB of Korean: the first Wikipedia articles and reviews (documents blank-line separated)."""
    folder = tmp_path_factory.mktemp("ko-corpus")
    wiki = _cut(_shared_file("kowiki"), folder / "wiki.txt", 3000)
    reviews = [line for line in _cut(_shared_file("nsmc"), folder / "nsmc.txt", 3000).read_text().splitlines()]
    corpus = folder / "ko.txt"
    corpus.write_text(wiki.read_text(encoding="utf-8") + "\n\n" + "\n\n".join(reviews) + "\n", encoding="utf-8")
    return corpus


@pytest.fixture(scope="session")
def zh_corpus(tmp_path_factory) -> Path:
    """About 1 MB of Chinese news titles, reviews and abstracts."""
    return _cut(_shared_file("zh-clue"), tmp_path_factory.mktemp("zh-corpus") / "zh.txt", 6000)


@pytest.fixture(scope="session")
def ko_vocab(tmp_path_factory, ko_corpus) -> Path:
    """A 5,000-piece morph-aware Korean vocabulary."""
    from kalbert.vocab import VocabBuildConfig, build_vocab

    out = tmp_path_factory.mktemp("vocab") / "ko-5k"
    return build_vocab(VocabBuildConfig(lang="ko", inputs=[str(ko_corpus)], out=str(out), vocab_size=5000, processes=1))


@pytest.fixture(scope="session")
def zh_vocab(tmp_path_factory, zh_corpus) -> Path:
    """A 8,000-piece jieba-aware Chinese vocabulary."""
    from kalbert.vocab import VocabBuildConfig, build_vocab

    out = tmp_path_factory.mktemp("vocab") / "zh-8k"
    return build_vocab(VocabBuildConfig(lang="zh", inputs=[str(zh_corpus)], out=str(out), vocab_size=8000, processes=1))


@pytest.fixture(autouse=True)
def private_cache_home(tmp_path_factory, monkeypatch) -> None:
    """Teachers and teacher embeddings made by tests go to a temp cache, never the user's ~/.cache/kalbert."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))


@pytest.fixture(autouse=True)
def no_shipped_reranker(tmp_path_factory, monkeypatch) -> None:
    """Searches in tests rank with the models the tests build: the shipped reranker, which `kalbert search query`
    and `kalbert serve` load by default, stays out unless a test names it (tests/search/test_default_reranker.py
    checks that default)."""
    monkeypatch.setattr("kalbert.search.reranking.SHIPPED_RERANKER", tmp_path_factory.getbasetemp() / "no-reranker")


def _write_tiny_albert(folder: Path, vocab: Path, head: str = "AlbertForPreTraining", hidden: int = 32,
                       max_positions: int = 128, seed: int = 0, languages: list[str] | None = None) -> Path:
    """A random ALBERT (E16, 2 layers, 2 heads, FFN 2H) with ``vocab``'s tokenizer, saved as ``head``."""
    import json
    import shutil

    import torch
    import transformers
    from transformers import AlbertConfig, AutoTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(str(vocab))
    torch.manual_seed(seed)
    config = AlbertConfig(vocab_size=len(tokenizer), embedding_size=16, hidden_size=hidden, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=2 * hidden, max_position_embeddings=max_positions)
    getattr(transformers, head)(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    shutil.copyfile(vocab / "spiece.model", folder / "spiece.model")
    if languages is not None:
        (folder / "kalbert.json").write_text(json.dumps({"languages": languages}), encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def make_tiny_albert():
    """The one builder of tiny random ALBERT checkpoints: ``make_tiny_albert(folder, vocab, head=..., ...)``."""
    return _write_tiny_albert


@pytest.fixture(scope="session")
def tiny_mc_albert(tmp_path_factory, ko_vocab) -> Path:
    """A random-init AlbertForMultipleChoice (hidden 32, 2 layers) with the test vocabulary's tokenizer; tests
    only read it."""
    return _write_tiny_albert(tmp_path_factory.mktemp("tiny-mc-albert"), ko_vocab, head="AlbertForMultipleChoice")


@pytest.fixture
def fake_cpu(monkeypatch):
    """``fake(flags, arch="x86_64", model=...)`` makes every hardware question (kalbert.hardware and all that
    asks it: bf16 and int8 choices, ``kalbert env``, results' hardware blocks) see that CPU for this test.

    It replaces the two readers under :mod:`kalbert.hardware` with a synthetic ``/proc/cpuinfo`` (x86
    ``flags`` or ARM ``Features`` lines) and ``platform.machine()``, so the parser runs too."""
    from kalbert import hardware

    def fake(flags: set[str] | frozenset[str], arch: str = "x86_64", model: str = "Fake CPU",
             cpus: int = 4) -> frozenset[str]:
        arm = hardware.normalise_arch(arch) == "aarch64"
        blocks = []
        for cpu in range(cpus):
            lines = [f"processor\t: {cpu}"]
            if arm:
                lines += [f"Features\t: {' '.join(sorted(flags))}", "CPU implementer\t: 0x41", "CPU part\t: 0xd0c"]
            else:
                lines += [f"model name\t: {model}", "physical id\t: 0", f"core id\t\t: {cpu}",
                          f"flags\t\t: {' '.join(sorted(flags))}"]
            blocks.append("\n".join(lines))
        text = "\n\n".join(blocks) + "\n"
        if arm and model != "Fake CPU":  # ARM kernels print no model name; a test may still want one
            text = f"model name\t: {model}\n" + text
        monkeypatch.setattr(hardware, "_cpuinfo_text", lambda: text)
        monkeypatch.setattr(hardware, "_machine", lambda: arch)
        return frozenset(flags)

    return fake


TINY_FILES = {  # registry file -> lines kept (header included)
    ("korsts", "train"): 97,
    ("korsts", "dev"): 49,
    ("korsts", "test"): 49,
    ("kornli", "dev"): 61,
    ("afqmc", "train"): 60,
    ("tatoeba-en-ko", None): 301,
    ("parallel-xnli-test", None): 21,
}


@pytest.fixture(scope="session")
def tiny_data_root(tmp_path_factory) -> Path:
    """The first rows of a few registry files, at their registry paths under a temp data root."""
    root = tmp_path_factory.mktemp("data")
    for (name, split), lines in TINY_FILES.items():
        try:
            (source,) = data_path(name, split)
        except KalbertError as exc:
            pytest.skip(f"shared data missing: {exc}")
        (rel,) = get_spec(name).splits[split or "all"]
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(source, encoding="utf-8") as handle:
            target.write_text("".join(line for _, line in zip(range(lines), handle, strict=False)), encoding="utf-8")
    return root


@pytest.fixture
def tiny_data(tiny_data_root, monkeypatch) -> Path:
    """Point the data registry at ``tiny_data_root`` for one test."""
    monkeypatch.setenv("KALBERT_DATA", str(tiny_data_root))
    return tiny_data_root


@pytest.fixture
def tiny_qa_data(tiny_data_root, tmp_path, monkeypatch):
    """The tiny data root plus a KorQuAD file of ten two-paragraph articles (the carve: 7 train, 1 val, 2 test)."""
    root = tmp_path / "data"
    shutil.copytree(tiny_data_root, root)
    topics = ["서울", "부산", "대구", "인천", "광주", "대전", "울산", "수원", "창원", "고양"]
    articles = [{"title": topic, "paragraphs": [
        {"context": f"{topic}은 한국의 도시이다. 인구가 많다.",
         "qas": [{"id": f"{i}a", "question": f"{topic}은 어느 나라의 도시인가?",
                  "answers": [{"text": "한국", "answer_start": len(topic) + 2}]}]},
        {"context": f"{topic}에는 오래된 시장이 있다.",
         "qas": [{"id": f"{i}b", "question": f"{topic}에 무엇이 있나?",
                  "answers": [{"text": "시장", "answer_start": len(topic) + 8}]}]}]}
        for i, topic in enumerate(topics)]
    target = root / get_spec("korquad").splits["train"][0]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"version": "test", "data": articles}, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setenv("KALBERT_DATA", str(root))
    return root


BOOLQ_ROWS = [("1", "서울은 한국의 수도이다.", "서울은 한국의 수도인가?", "True"),
              ("2", "부산에는 큰 항구가 있다.", "부산에는 항구가 없다.", "False")]
"""(ID, Text, Question, Answer) of the tiny KoBEST BoolQ train file: a yes and a no question"""


@pytest.fixture
def tiny_boolq_rows(tiny_qa_data) -> list[tuple[str, str, str, str]]:
    """The tiny QA data root plus a two-row KoBEST BoolQ train file; returns its rows (:data:`BOOLQ_ROWS`)."""
    target = tiny_qa_data / get_spec("kobest-boolq").splits["train"][0]
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = ["ID\tText\tQuestion\tAnswer", *("\t".join(row) for row in BOOLQ_ROWS)]
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return BOOLQ_ROWS


CORPUS_DOCUMENTS = [  # two paragraphs of three sentences and one of two, too few to make a row
    ["고양이는 사람과 함께 사는 작은 동물이다. 고양이는 밤에 쥐를 잡는 데 아주 뛰어나다. 고양이는 하루의 절반 넘게 "
     "잠을 자며 지낸다.",
     "이 문단은 문장이 둘뿐이라서 질문과 나머지 문단으로 나눌 수 없으므로 학습 자료에서 빠진다. 두 번째 "
     "문장도 길게 써서 문단 전체가 육십사 글자를 넘도록 만들었다."],
    ["부산은 한국 남쪽 바다에 있는 큰 항구 도시이다. 부산에는 해마다 국제 영화제가 열린다. 부산의 바닷가에는 여름마다 "
     "사람들이 많이 모인다."],
]


@pytest.fixture
def tiny_corpus(tiny_qa_data) -> list[list[str]]:
    """The tiny QA data root plus a kowiki file of :data:`CORPUS_DOCUMENTS`; returns them."""
    target = tiny_qa_data / get_spec("kowiki").splits["all"][0]
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(target, "wt", encoding="utf-8") as handle:
        handle.write("\n\n".join("\n".join(document) for document in CORPUS_DOCUMENTS) + "\n")
    return CORPUS_DOCUMENTS
