"""DRCD: read in Simplified by a zh model, divided by article across its two files, pooled with other QA sets,
and every run's article split recorded (a tiny fake data root and a tiny random ALBERT; seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kalbert.cli.main import main
from kalbert.data import DATASETS, QAExample, assert_trainable, data_path, load_qa, parse_ref
from kalbert.errors import KalbertError
from kalbert.tasks.qa.data import article_split, read_label, simplified

REPO = Path(__file__).resolve().parents[2]
T2S = "drcd (Traditional -> Simplified, opencc t2s)"


def _squad(articles: list[tuple[str, str, str]], prefix: str) -> dict:
    """(title, context, answer) per article, one paragraph and one question each."""
    data = [{"title": title, "paragraphs": [{"context": context, "qas": [
        {"id": f"{prefix}-{i}", "question": "問題是什麼？", "answers": [{"text": answer,
                                                                   "answer_start": context.index(answer)}]}]}]}
        for i, (title, context, answer) in enumerate(articles)]
    return {"version": "1", "data": data}


def _write(root: Path, rel: str, value: dict) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")


@pytest.fixture(scope="module")
def fake_root(tmp_path_factory) -> Path:
    """A tiny DRCD (Traditional; the two files share articles, as the real ones do) and a tiny KorQuAD."""
    root = tmp_path_factory.mktemp("qa-data")
    dev, test = DATASETS["drcd"].splits["all"]
    articles = [(f"條目{i}", f"第{i}篇說：臺灣的學術研究由德國學者開創，歷史悠久。", "德國學者") for i in range(12)]
    _write(root, dev, _squad(articles[:8], "dev"))
    _write(root, test, _squad([*articles[6:], (articles[0][0], "後來這門學問傳到東亞各國。", "東亞")], "test"))
    (korquad,) = DATASETS["korquad"].splits["dev"]
    _write(root, korquad, _squad([(f"문서{i}", f"{i}번 문서: 대한민국의 수도는 서울특별시이다.", "서울특별시")
                                  for i in range(10)], "ko"))
    return root


@pytest.fixture
def use_fake_root(fake_root, monkeypatch) -> Path:
    monkeypatch.setenv("KALBERT_DATA", str(fake_root))
    return fake_root


def test_traditional_becomes_simplified_with_answers_in_place():
    context = "在歐洲，梵語的學術研究，由德國學者陸特和漢斯雷頓開創。"
    answers, starts = ("德國學者", "沒有"), (context.index("德國學者"), -1)
    example = QAExample("q1", "梵文", context, "誰開創了梵語研究？", answers, starts)
    converted = simplified(example)
    assert converted.context == "在欧洲，梵语的学术研究，由德国学者陆特和汉斯雷顿开创。"
    assert (converted.title, converted.question) == ("梵文", "谁开创了梵语研究？")
    assert converted.answers == ("德国学者", "没有")
    start = converted.answer_starts[0]
    assert converted.context[start:start + 4] == "德国学者" and converted.answer_starts[1] == -1
    assert read_label("drcd", ["ko", "zh"]) == T2S and read_label("drcd", ["ko"]) == "drcd"
    assert read_label("cmrc2018", ["zh"]) == "cmrc2018"


def test_drcd_parts_divide_the_articles_of_both_files(use_fake_root):
    parts = {part: load_qa("drcd", part) for part in ("train", "val", "test")}
    titles = {part: {e.title for e in examples} for part, examples in parts.items()}
    assert not (titles["train"] & titles["test"] or titles["val"] & titles["test"] or titles["train"] & titles["val"])
    assert set().union(*titles.values()) == {f"條目{i}" for i in range(12)}
    assert sum(map(len, parts.values())) == len(load_qa("drcd", "all")) == 15
    record = article_split("drcd")
    assert record["articles"] == {"train": 9, "val": 1, "test": 2} and len(record["sha256"]) == 64
    assert record["divided"] == list(DATASETS["drcd"].splits["all"])
    for ref in ("drcd:test", "drcd:all"):
        with pytest.raises(KalbertError, match=f"{ref} is an evaluation split"):
            assert_trainable(*parse_ref(ref))


def test_real_drcd_parts():
    try:
        data_path("drcd", "all")
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")
    record = article_split("drcd")
    assert sum(record["questions"].values()) == 7017 and sum(record["articles"].values()) == 506
    assert record["articles"]["test"] == 101


@pytest.fixture(scope="module")
def zh_albert(tmp_path_factory, make_tiny_albert) -> Path:
    return make_tiny_albert(tmp_path_factory.mktemp("zh-albert"), REPO / "vocab" / "zh-32k", languages=["zh"])


def test_pooled_training_records_sets_script_and_split(use_fake_root, zh_albert, tmp_path, capsys):
    out, results = tmp_path / "qa", tmp_path / "qa.json"
    argv = ["qa", "train", "--model", str(zh_albert), "--task", "drcd", "--train", "drcd", "korquad", "--out", str(out),
            "--epochs", "1", "--batch-size", "8", "--max-seq-length", "64", "--doc-stride", "16",
            "--results", str(results), "--name", "tiny"]
    assert main(argv) == 0
    assert f"trained on the train parts of {T2S}, korquad" in capsys.readouterr().out
    meta = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["train_sets"] == [T2S, "korquad"] and meta["report"]["read_as"] == T2S
    assert meta["train_questions"] == len(load_qa("drcd", "train")) + len(load_qa("korquad", "train"))
    assert set(meta["article_splits"]) == {"drcd", "korquad"}
    assert meta["article_splits"]["korquad"]["articles"] == {"train": 7, "val": 1, "test": 2}
    assert T2S in (out / "README.md").read_text(encoding="utf-8")
    for record in json.loads(results.read_text(encoding="utf-8"))["results"]:
        assert record["article_splits"] == meta["article_splits"] and record["train_sets"] == meta["train_sets"]

    assert main(["qa", "evaluate", "--model", str(out), "--task", "drcd", "--split", "val"]) == 0
    assert f"read as {T2S}" in capsys.readouterr().out
