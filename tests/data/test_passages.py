"""No evaluation passage (QA context, MC passage) reaches pretraining data or a distillation sample.

A fake data root holds a tiny KorQuAD and DRCD; a tiny corpus copies their passages verbatim, re-wrapped,
converted to Simplified and lightly edited. Only that root is searched, so the tests read no shared data.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kalbert.cli.main import main
from kalbert.data import DATASETS, QA_CARVES
from kalbert.data import roots as data_roots
from kalbert.data.heldout import heldout_sentences
from kalbert.data.passages import PassageGuard, letters, passage_index, passage_splits, sentence_keys
from kalbert.data.registry import ArticleCarve
from kalbert.data.script import to_simplified
from kalbert.teachers.corpus import sample_sentences

REPO = Path(__file__).resolve().parents[2]
KO_PASSAGES = [
    "세종대왕은 조선의 제4대 국왕으로 1418년부터 1450년까지 재위하였다. 그는 집현전을 설치하여 많은 학자를 길렀다. "
    "1443년에는 백성을 위하여 훈민정음을 창제하고 1446년에 이를 반포하였다.",
    "한강은 강원도 태백시의 검룡소에서 발원하여 서울특별시를 가로질러 서해로 흘러드는 강이다. 한강 유역에는 "
    "선사 시대부터 많은 사람이 살았으며 삼국 시대에는 이 지역을 차지하려는 다툼이 끊이지 않았다.",
]
EDITED_SOURCE = ("이순신은 조선 중기의 무신으로 임진왜란 때 전라좌도 수군절도사가 되어 거북선을 만들고 "
                 "옥포 한산도 명량 노량 등지에서 왜군을 크게 무찔러 오늘날까지 존경받는다.")
ZH_PASSAGE = "在歐洲，梵語的學術研究由德國學者陸特和漢斯雷頓開創。後來威廉瓊斯發現印歐語系，也要歸功於對梵語的研究。"
CLEAN = [
    ["김치는 배추와 무를 소금에 절인 뒤 고춧가루와 젓갈로 버무려 발효시킨 한국의 전통 음식이다.",
     "지역과 계절에 따라 재료와 담그는 방법이 조금씩 다르며 종류가 수백 가지에 이른다."],
    ["제주도는 대한민국에서 가장 큰 섬으로 한라산과 오름, 용암 동굴이 유명하다.",
     "해마다 많은 관광객이 찾아오며 감귤과 해산물이 특산물로 알려져 있다."],
    ["세종대왕은 훌륭했다."],  # a short sentence shared by chance: under MIN_CHARS, kept
]
LEAKED = [
    ["조선 전기의 문화에 관한 글이다.", KO_PASSAGES[0]],  # verbatim, inside a longer document
    ["한강은  강원도 태백시의 검룡소에서",  # re-wrapped mid-sentence and re-spaced
     "발원하여 서울 특별시를 가로질러 서해로",
     "흘러드는 강이다.   한강 유역에는 선사 시대부터 많은 사람이 살았으며"],
    ["충무공 이순신 장군은 조선 중기의 무신으로 임진왜란 때 전라좌도 수군절도사가 되어 거북선을 만들고 "  # edited,
     "옥포 한산도 명량 노량 등지에서 왜군을 크게 무찔러 오늘날까지 존경받는다."],  # a long run kept
    ["中文资料：" + to_simplified(ZH_PASSAGE)],  # DRCD converted to Simplified
]


def _squad(titles_and_contexts: list[tuple[str, str]]) -> dict:
    data = [{"title": title, "paragraphs": [{"context": context, "qas": [
        {"id": f"{title}-q", "question": "무엇인가?", "answers": [{"text": context[:4], "answer_start": 0}]}]}]}
        for title, context in titles_and_contexts]
    return {"version": "1", "data": data}


def _write(root: Path, rel: str, value: dict) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")


@pytest.fixture
def only_root(tmp_path, monkeypatch):
    """``only_root(folder)``: that folder is the one data root searched (no ../shared/data, no cache)."""
    monkeypatch.setattr(data_roots, "_BESIDE_CHECKOUT", tmp_path / "no-shared-data")
    monkeypatch.chdir(tmp_path)

    def use(folder: Path) -> Path:
        monkeypatch.setenv("KALBERT_DATA", str(folder))
        return folder

    heldout_sentences.cache_clear()  # held-out sentences are cached once per process, not per data root
    yield use
    heldout_sentences.cache_clear()


@pytest.fixture
def eval_root(tmp_path, only_root) -> Path:
    root = only_root(tmp_path / "data")
    (korquad,) = DATASETS["korquad"].splits["dev"]
    _write(root, korquad, _squad([("세종", KO_PASSAGES[0]), ("한강", KO_PASSAGES[1]), ("이순신", EDITED_SOURCE)]))
    dev, test = DATASETS["drcd"].splits["all"]
    _write(root, dev, _squad([("梵文", ZH_PASSAGE)]))
    _write(root, test, _squad([("梵文", "梵語是印度的古典語言，是印歐語系的一支，與其他語言有許多相同的詞根。")]))
    return root


@pytest.fixture
def corpus(tmp_path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n\n".join("\n".join(doc) for doc in [CLEAN[0], *LEAKED, *CLEAN[1:]]) + "\n", encoding="utf-8")
    return path


def test_every_scored_passage_split_is_indexed_and_carved_files_whole():
    splits = set(passage_splits())
    assert {("korquad", "dev"), ("cmrc2018", "dev"), ("drcd", "all"), ("c3", "dev"), ("c3", "test"),
            ("chid", "test_public"), ("kobest-boolq", "test"), ("kobest-hellaswag", "test"),
            ("kobest-copa", "test"), ("xcopa-zh", "test")} <= splits
    assert not {("korquad", "test"), ("c3", "train"), ("cmrc2018", "trial"), ("korsts", "test")} & splits
    carves: set[ArticleCarve] = set(QA_CARVES.values())
    for carve in carves:  # the test part's whole files are indexed through one split
        assert any(DATASETS[name].splits[split] == carve.sources for name, split in splits)


def test_keys_ignore_wrapping_spacing_and_punctuation():
    rewrapped = "세종대왕은  조선의 제4대\n국왕으로 1418년부터 1450년까지 “재위”하였다"
    assert sentence_keys(KO_PASSAGES[0])[0] == sentence_keys(rewrapped)[0]
    assert letters("Ｆｕｌｌ－ｗｉｄｔｈ　ＡＢＣ １２３。") == "fullwidthabc123"
    assert sentence_keys("세종대왕은 훌륭했다.") == []  # too short to tell a copy from chance


def test_guard_drops_exactly_the_copies(eval_root, corpus):
    from kalbert.data import iter_documents

    guard = PassageGuard()
    kept = list(guard.filter(iter_documents([str(corpus)])))
    assert kept == CLEAN
    assert guard.dropped == {"korquad": 3, "drcd": 1}
    record = guard.record()
    assert record["dropped_documents"] == 4 and record["indexed"] == ["korquad:dev", "drcd:all"]
    assert record["sentence_keys"] > 0 and record["run_keys"] > 0


def test_the_index_follows_the_files(eval_root):
    before = passage_index()
    assert passage_index() is before  # kept in memory
    (rel,) = DATASETS["korquad"].splits["dev"]
    _write(eval_root, rel, _squad([("세종", KO_PASSAGES[0])]))
    assert passage_index().sha256 != before.sha256


def test_without_evaluation_data_nothing_changes(tmp_path, only_root, corpus):
    from kalbert.data import iter_documents

    only_root(tmp_path / "empty")
    guard = PassageGuard()
    documents = list(iter_documents([str(corpus)]))
    assert list(guard.filter(documents)) == documents
    assert guard.record()["dropped_documents"] == 0 and guard.record()["indexed"] == []


def test_data_build_drops_and_records_them(eval_root, corpus, tmp_path, capsys):
    out = tmp_path / "built"
    argv = ["data", "build", "--vocab", str(REPO / "vocab" / "ko-32k"), "--inputs", str(corpus), "--out", str(out),
            "--max-seq-length", "32", "--heldout-fraction", "0", "--processes", "1"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "dropped 4 documents holding evaluation passages (korquad: 3, drcd: 1)" in printed
    meta = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["evaluation_passages"]["dropped_documents"] == 4
    assert meta["evaluation_passages"]["by_data_set"] == {"korquad": 3, "drcd": 1}
    assert meta["stats"]["train"]["documents"] == len(CLEAN)


def test_distillation_sample_leaves_the_copies_out(eval_root, corpus):
    sample = sample_sentences([str(corpus)], max_sentences=100, min_chars=5, progress=False)
    assert sample.passage_documents_dropped == 4
    text = " ".join(sample.all())
    assert "김치는" in text and "제주도는" in text
    assert not any(word in text for word in ("집현전", "검룡소", "거북선"))
