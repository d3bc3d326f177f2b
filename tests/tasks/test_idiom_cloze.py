"""Idiom cloze examples cut from a corpus (`kalbert mc cloze`) and their use as extra CHID training data.

A fake data root holds a CHID test file whose passage a corpus document copies; that document never yields
an example. Fine-tuning reads the shared CHID split with a tiny random ALBERT.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from kalbert.cli.main import main
from kalbert.data import BLANK, DATASETS, MCExample, data_path, load_mc, load_mc_file
from kalbert.data import roots as data_roots
from kalbert.data.heldout import heldout_sentences
from kalbert.errors import KalbertError
from kalbert.tasks import MCTrainConfig, train_mc
from kalbert.tasks.idiom_cloze import IDIOM_SLOT, ClozeConfig, build_cloze, find_blanks, idiom_lexicon
from kalbert.tasks.multiple_choice import format_choices
from kalbert.training import LoopConfig

IDIOMS = ["一心一意", "不知不觉", "四通八达", "名副其实", "前所未有", "无可奈何", "浩浩荡荡", "胡说八道", "大吃一惊"]
CLEAN = [
    ["他一心一意地工作，不知不觉天已经黑了。", "这座城市的道路四通八达，交通十分便利。"],
    ["这次展览规模之大前所未有，观众们大吃一惊。", "面对这样的结果，他也无可奈何。"],
    ["长江浩浩荡荡地流向大海，景色名副其实地壮观。", "别听他胡说八道。"],
]
LEAKED_PASSAGE = ("今年的春节联欢晚会上，演员们一心一意地排练了三个月，"
                  "观众们看得不知不觉就到了午夜时分，纷纷称赞节目精彩。")


@pytest.fixture
def chid_root(tmp_path, monkeypatch) -> Path:
    """The only data root: a CHID test file holding LEAKED_PASSAGE (its blank where 不知不觉 stands)."""
    monkeypatch.setattr(data_roots, "_BESIDE_CHECKOUT", tmp_path / "no-shared-data")
    monkeypatch.chdir(tmp_path)  # nor ../shared/data from the working directory
    root = tmp_path / "data"
    (rel,) = DATASETS["chid"].splits["test_public"]
    path = root / rel
    path.parent.mkdir(parents=True)
    record = {"id": 1, "candidates": IDIOMS[:7], "content": LEAKED_PASSAGE.replace("不知不觉", "#idiom#"), "answer": 1}
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    monkeypatch.setenv("KALBERT_DATA", str(root))
    heldout_sentences.cache_clear()
    yield root
    heldout_sentences.cache_clear()


@pytest.fixture
def corpus(tmp_path) -> Path:
    path = tmp_path / "zh.txt"
    documents = [CLEAN[0], ["新闻。" + LEAKED_PASSAGE], *CLEAN[1:]]  # copied as a sentence
    path.write_text("\n\n".join("\n".join(doc) for doc in documents) + "\n", encoding="utf-8")
    return path


def test_lexicon_and_blanks():
    lexicon = idiom_lexicon()
    assert len(lexicon) > 10_000 and set(IDIOMS) <= lexicon and all(len(word) == 4 for word in lexicon)
    blanks = find_blanks("他一心一意地工作，不知不觉天黑了。", lexicon, 3)
    assert [(b.before, b.idiom, b.after) for b in blanks] == [("他", "一心一意", "地工作"),
                                                              ("工作，", "不知不觉", "天黑了")]


def test_cloze_examples_come_only_from_clean_documents(chid_root, corpus, tmp_path, caplog):
    out = tmp_path / "cloze.jsonl"
    config = ClozeConfig(out=str(out), corpus=[str(corpus)], max_examples=100, context_chars=8)
    with caplog.at_level(logging.WARNING):
        record = build_cloze(config, progress=False)
    assert "fewer than the 100 asked" in caplog.text
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    clean_text = "".join("".join(doc) for doc in CLEAN)
    assert len(rows) == record["examples"]["written"] == 9  # every idiom of the clean documents once
    for row in rows:
        assert row["content"].count(IDIOM_SLOT) == 1 and len(set(row["candidates"])) == 7
        filled = row["content"].replace(IDIOM_SLOT, row["candidates"][row["answer"]])
        assert filled in clean_text  # the blank's own idiom is the answer
        wrong = [c for i, c in enumerate(row["candidates"]) if i != row["answer"]]
        assert not any(c in filled for c in wrong)
    assert "春节" not in out.read_text(encoding="utf-8")
    assert record["passage_filter"]["dropped_documents"] == 1
    assert record["passage_filter"]["by_data_set"] == {"chid": 1}
    assert json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))["sha256"] == record["sha256"]
    loaded = load_mc_file("chid", out)
    assert len(loaded) == 9 and all(e.context.count(BLANK) == 1 for e in loaded)

    again = tmp_path / "again.jsonl"
    assert build_cloze(ClozeConfig(out=str(again), corpus=[str(corpus)], max_examples=100, context_chars=8),
                       progress=False)["sha256"] == record["sha256"]  # the seed decides everything


def test_cli_cloze_errors(chid_root, tmp_path, capsys):
    few = tmp_path / "few.txt"
    few.write_text("他一心一意地工作。\n", encoding="utf-8")
    assert main(["mc", "cloze", "--corpus", str(few), "--out", str(tmp_path / "c.jsonl")]) == 2
    assert "distinct idioms" in capsys.readouterr().err
    crowded = tmp_path / "crowded.txt"  # seven idioms, each context holding them all: no wrong candidate is left
    crowded.write_text("，".join(IDIOMS[:7]) + "。\n", encoding="utf-8")
    assert main(["mc", "cloze", "--corpus", str(crowded), "--out", str(tmp_path / "c.jsonl")]) == 2
    assert "wrong idioms left" in capsys.readouterr().err
    assert main(["mc", "cloze", "--corpus", "no-such-corpus", "--out", str(tmp_path / "c.jsonl")]) == 2
    assert not (tmp_path / "c.jsonl").exists()


def test_a_cloze_is_read_with_the_choice_in_the_blank():
    example = MCExample("x" * 100 + f"他{BLANK}地工作" + "y" * 100, "", ("一心一意", "不知不觉"), 0, "1")
    (first, second), _ = format_choices(example)
    assert second == "" and first == "x" * 59 + "他一心一意地工作" + "y" * 57  # 60 characters each side


def _chid_present():
    try:
        for split in ("train", "dev", "test_public"):
            data_path("chid", split)
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")


def test_extra_training_examples_join_the_train_split(tiny_mc_albert, tmp_path):
    _chid_present()
    extra = tmp_path / "cloze.jsonl"
    rows = [{"id": f"c{i}", "candidates": IDIOMS[:7], "content": f"第{i}次他#idiom#地工作。", "answer": 0}
            for i in range(5)]
    extra.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    config = MCTrainConfig(model=str(tiny_mc_albert), task="chid", out=str(tmp_path / "mc"), max_rows=3,
                           max_eval_rows=4, extra_train=str(extra), loop=LoopConfig(epochs=1, batch_size=4, lr=1e-3))
    summary = train_mc(config)
    assert summary["train_examples"] == 6  # 3 of the split, 3 of the file
    assert summary["extra_train"]["examples"] == 5 and len(summary["extra_train"]["sha256"]) == 64

    scored = load_mc("chid", "test_public")[0]
    leaked = tmp_path / "leaked.jsonl"
    content = scored.context.replace(BLANK, IDIOM_SLOT)
    leaked.write_text(json.dumps({"id": 1, "candidates": list(scored.choices), "content": content,
                                  "answer": scored.label}, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(KalbertError, match="holds a passage of chid"):
        train_mc(MCTrainConfig(model=str(tiny_mc_albert), task="chid", out=str(tmp_path / "mc2"),
                               extra_train=str(leaked)))
    with pytest.raises(KalbertError, match="does not exist"):
        train_mc(MCTrainConfig(model=str(tiny_mc_albert), task="chid", out=str(tmp_path / "mc3"),
                               extra_train=str(tmp_path / "missing.jsonl")))
