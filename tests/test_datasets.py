"""Data registry: resolution order, error messages, eval-split refusal, loaders and corpus streaming."""

from __future__ import annotations

import gzip
import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from kalbert.data import (
    BLANK,
    DATASETS,
    NLI_LABELS,
    LabeledPair,
    MCExample,
    STSPair,
    answer_pool,
    assert_trainable,
    data_path,
    data_roots,
    describe_datasets,
    iter_documents,
    list_datasets,
    load_answers,
    load_boolq,
    load_mc,
    load_nli,
    load_pairs,
    load_parallel,
    load_qa,
    load_sts,
    parse_ref,
    question_parts,
    resolve_sources,
    roots,
)
from kalbert.data.loaders import ANSWER_POOL_MIN
from kalbert.data.registry import question_key
from kalbert.errors import KalbertError

KORSTS_TEST = "bench/ko/korsts/sts-test.tsv"
KORSTS_HEADER = "genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2\n"


def need(name: str, split: str | None = None) -> None:
    """Skip unless the real shared data set is found the way the registry finds it."""
    try:
        data_path(name, split)
    except KalbertError as exc:
        pytest.skip(f"shared data not available: {exc.message}")


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point every default data root into tmp_path (none of them exists yet); return tmp_path."""
    monkeypatch.delenv("KALBERT_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(roots, "_BESIDE_CHECKOUT", tmp_path / "beside" / "shared" / "data")
    (tmp_path / "work" / "cwd").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "work" / "cwd")
    return tmp_path


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8") if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def fake_korsts(root: Path, sentence: str = "a") -> Path:
    return write(root / KORSTS_TEST, KORSTS_HEADER + f"g\tf\t2012\t0001\t4.5\t{sentence}\tb\n")


# ------------------------------------------------------------------------------------------ registry
def test_registry_names_and_kinds() -> None:
    expected = {
        "kowiki", "nsmc", "zh-laws", "zh-clue", "korsts", "klue-sts", "kornli", "kobest-copa",
        "kobest-hellaswag", "kobest-boolq", "korquad", "stsb-zh", "stsb-ko-zh", "cnsd-stsb", "afqmc", "lcqmc",
        "pawsx-zh", "atec", "c3", "chid", "xcopa-zh", "ocnli", "cmrc2018", "drcd", "stsb-en", "parallel-stsb-train",
        "parallel-xnli-dev", "parallel-xnli-test", "tatoeba-en-zh", "tatoeba-en-ko", "news-en-ko",
        "klue-nli", "klue-nli-bt", "parakqc", "question-pair", "cmnli", "csnli", "oppo-xiaobu", "simclue",
        "chinesests", "answers-ko", "answers-zh",
    }
    assert set(list_datasets()) == expected
    assert list_datasets("corpus") == ["kowiki", "nsmc", "zh-laws", "zh-clue"]
    for spec in DATASETS.values():
        assert spec.url.startswith("https://") and spec.licence and spec.description
    c3_test = DATASETS["c3"].splits["test"]
    assert c3_test == ("bench/zh/c3/c3-m-test.json", "bench/zh/c3/c3-d-test.json")


def test_every_shared_file_is_registered() -> None:
    need("korsts", "test")
    root = data_path("korsts", "test")[0].parents[3]
    specs = DATASETS.values()
    registered = {rel for spec in specs for files in spec.splits.values() for rel in files}
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} - {"README.md"}
    assert on_disk - registered == set()
    assert registered - on_disk == set()


TRAINING_ONLY = ["klue-nli", "klue-nli-bt", "parakqc", "question-pair", "cmnli", "csnli", "oppo-xiaobu", "simclue",
                 "chinesests"]


@pytest.mark.parametrize("name", TRAINING_ONLY)
def test_training_only_sets_have_one_trainable_split(name: str) -> None:
    assert list(DATASETS[name].splits) == ["train"] and not DATASETS[name].eval_splits
    assert_trainable(*parse_ref(name + ":train"))


def test_training_only_sets_read_real_files() -> None:
    need("klue-nli", "train")
    assert len(load_nli("klue-nli", "train")) == 24_992
    assert {p.label for p in load_nli("cmnli", "train")} == set(NLI_LABELS)
    same = load_pairs("question-pair", "train")
    assert len(same) == 6_750 and sum(p.label for p in same) == 4_663  # the file's 0 = same meaning
    simclue = load_pairs("simclue", "train")
    assert len(simclue) == 9_699 + 9_408 + 2 * 9_247
    assert load_sts("chinesests", "train")[0].score == 5.0


def test_paraphrase_groups_become_positive_and_neighbour_negative_pairs(isolated: Path) -> None:
    rows = "group\ttopic_id\ttype_id\tsentence\n" + "".join(
        f"{g}\t0\t0\t{text}\n" for g, text in [(0, "메일 언제 와?"), (0, "메일 언제 오니?"), (1, "메일 누가 보냈어?"),
                                                (1, "누가 메일 보냈니?")])
    write(isolated / "data" / DATASETS["parakqc"].splits["train"][0], rows)
    pairs = load_pairs("parakqc", "train", root=isolated / "data")
    assert LabeledPair("메일 언제 와?", "메일 언제 오니?", 1) in pairs
    assert LabeledPair("메일 언제 와?", "메일 누가 보냈어?", 0) in pairs
    assert LabeledPair("누가 메일 보냈니?", "메일 언제 오니?", 0) in pairs


def test_backtranslations_are_paraphrase_pairs(isolated: Path) -> None:
    header = "premise\tpremise_backtranslated\thypothesis\thypothesis_backtranslated\n"
    write(isolated / "data" / DATASETS["klue-nli-bt"].splits["train"][0], header + "가\t가다\t나\t나다\n")
    assert load_pairs("klue-nli-bt", "train", root=isolated / "data") == [LabeledPair("가", "가다", 1),
                                                                           LabeledPair("나", "나다", 1)]


@pytest.mark.parametrize("ref", [
    "korsts:test", "klue-sts:dev", "stsb-zh:test", "stsb-ko-zh:test", "cnsd-stsb:test", "lcqmc:test",
    "pawsx-zh:test", "afqmc:dev", "c3:test", "chid:test_public", "xcopa-zh:test", "kobest-copa:test",
    "kobest-hellaswag:test", "kobest-boolq:test", "korquad:dev", "cmrc2018:dev", "ocnli:dev", "kornli:test",
    "stsb-en:test", "parallel-xnli-test:all",
])
def test_eval_splits_are_refused(ref: str) -> None:
    with pytest.raises(KalbertError, match=f"^{ref} is an evaluation split"):
        assert_trainable(*parse_ref(ref))


def test_training_splits_are_allowed() -> None:
    for ref in ["korsts:train", "korsts:dev", "c3:train", "ocnli:train", "kowiki", "parallel-stsb-train:all"]:
        assert_trainable(*parse_ref(ref))


def test_parse_ref() -> None:
    assert parse_ref("korsts:dev") == ("korsts", "dev")
    assert parse_ref("kowiki") == ("kowiki", None)
    with pytest.raises(KalbertError, match="unknown split 'val'") as info:
        parse_ref("korsts:val")
    assert info.value.hint == "splits: train, dev, test"


def test_unknown_name_lists_known_names() -> None:
    with pytest.raises(KalbertError, match="unknown data set 'korst'") as info:
        data_path("korst", "test")
    assert "did you mean 'korsts'?" in info.value.hint
    assert "klue-sts" in info.value.hint and "news-en-ko" in info.value.hint


def test_split_required_when_several() -> None:
    with pytest.raises(KalbertError, match="data set 'korsts': name a split"):
        data_path("korsts")


# ---------------------------------------------------------------------------------------- resolution
def test_resolution_order(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    explicit, env = isolated / "explicit", isolated / "env"
    beside = roots._BESIDE_CHECKOUT
    cwd_relative = Path.cwd().parent / "shared" / "data"
    cache = isolated / "cache" / "kalbert" / "data"
    monkeypatch.setenv("KALBERT_DATA", str(env))
    assert data_roots(explicit) == [explicit, env, beside, cwd_relative, cache]
    for root in (cache, cwd_relative, beside, env, explicit):
        fake_korsts(root)
        assert data_path("korsts", "test", root=explicit) == [root / KORSTS_TEST]


def test_resolution_defaults_to_home_cache(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(isolated / "home"))
    assert data_roots()[-1] == isolated / "home" / ".cache" / "kalbert" / "data"


def test_missing_data_set_names_every_place(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KALBERT_DATA", str(isolated / "env"))
    roots = data_roots(isolated / "explicit")
    with pytest.raises(KalbertError) as info:
        data_path("korsts", "test", root=isolated / "explicit")
    message = info.value.message
    assert message == f"data set 'korsts' (split test) not found; looked in: {', '.join(map(str, roots))}"
    assert "\n" not in str(info.value)
    assert info.value.hint.startswith(f"download it from https://github.com/kakaobrain/KorNLUDatasets into "
                                      f"{isolated / 'explicit'}")
    assert KORSTS_TEST in info.value.hint and "KALBERT_DATA" in info.value.hint


def test_describe_datasets(isolated: Path) -> None:
    fake_korsts(isolated / "d")
    rows = {row["name"]: row for row in describe_datasets(isolated / "d")}
    assert set(rows) == set(list_datasets())
    korsts = rows["korsts"]
    assert korsts["found"] == ["test"] and korsts["missing"] == ["train", "dev"]
    assert korsts["eval_splits"] == ["test"] and korsts["location"] == str(isolated / "d")
    assert rows["kowiki"]["found"] == [] and rows["kowiki"]["location"] is None
    assert {"kind", "lang", "splits", "url", "licence"} <= set(korsts)


# ------------------------------------------------------------------------------- loaders, real data
def test_sts_counts_on_real_data() -> None:
    need("korsts", "test")
    korsts = load_sts("korsts", "test")
    assert len(korsts) == 1379 and isinstance(korsts[0], STSPair)
    assert all(0.0 <= p.score <= 5.0 for p in korsts)
    assert len(load_sts("klue-sts", "dev")) == 519
    assert len(load_sts("stsb-zh", "test")) == 1379
    assert len(load_sts("stsb-en", "test")) == 1379
    assert len(load_sts("cnsd-stsb", "test")) == 1361
    # stsb-zh is row-aligned with KorSTS: same scores in the same order
    assert [p.score for p in load_sts("stsb-zh", "test")] == [p.score for p in korsts]
    assert len(load_sts("stsb-ko-zh", "test")) == 2 * 1379


def test_mc_counts_on_real_data() -> None:
    need("kobest-copa", "test")
    copa = load_mc("kobest-copa", "test")
    assert len(copa) == 1000 and {e.question for e in copa} == {"원인", "결과"}
    assert all(len(e.choices) == 2 and e.label in (0, 1) for e in copa)
    assert len(load_mc("kobest-hellaswag", "dev")) == 500
    c3 = load_mc("c3", "test")
    assert len(c3) == 2002 + 1890 and len({e.id for e in c3}) == len(c3)
    assert all(e.choices[e.label] for e in c3)
    chid = load_mc("chid", "dev")
    assert len(chid) == 202 and all(e.context.count(BLANK) == 1 and len(e.choices) == 7 for e in chid)
    xcopa = load_mc("xcopa-zh", "test")
    assert len(xcopa) == 500 and {e.question for e in xcopa} == {"cause", "effect"}


def test_pairs_nli_qa_parallel_on_real_data() -> None:
    need("atec")
    atec = load_pairs("atec", "train")
    assert len(atec) == 39346 and atec[0] == LabeledPair("怎么更改花呗手机号码", atec[0].sentence2, 1)
    assert "\ufeff" not in atec[0].sentence2
    assert len(load_pairs("pawsx-zh", "test")) == 2000
    assert len(load_pairs("kobest-boolq", "dev")) == len(load_boolq("kobest-boolq", "dev")) == 700
    ocnli = load_nli("ocnli", "dev")
    assert 2900 < len(ocnli) < 3000 and {p.label for p in ocnli} == set(NLI_LABELS)
    assert len(load_nli("kornli", "test")) == 5010
    korquad = load_qa("korquad", "dev")
    assert len(korquad) == 5774
    spans = [(q.context, a, s) for q in korquad for a, s in zip(q.answers, q.answer_starts, strict=True)]
    assert all(context[s:s + len(a)] == a for context, a, s in spans)
    cmrc = load_qa("cmrc2018", "dev")
    assert len(cmrc) == 3219 and any(-1 in q.answer_starts for q in cmrc)
    stsb = load_parallel("parallel-stsb-train")
    assert stsb.languages == ("en", "ko", "zh") and len(stsb.rows) == 10536


def test_answer_sets_are_carved_by_question_on_real_data() -> None:
    need("answers-ko", "train")
    for name, total in (("answers-ko", 2_747), ("answers-zh", 25_959)):
        carves = {split: load_answers(name, split) for split in ("train", "dev", "test")}
        assert sum(map(len, carves.values())) == total
        keys = {split: {question_key(p.question) for p in pairs} for split, pairs in carves.items()}
        assert not keys["train"] & keys["dev"] and not keys["train"] & keys["test"] and not keys["dev"] & keys["test"]
        assert 0 < len(keys["test"]) <= 1500 and 0 < len(keys["dev"]) <= 1000
        assert load_answers(name, "test") == carves["test"]  # the same carve every time
    assert_trainable("answers-ko", "train")  # no error: train carves are for training
    with pytest.raises(KalbertError, match="evaluation split"):
        assert_trainable("answers-zh", "test")
    pool = answer_pool("answers-ko", "test")
    assert len(pool.answers) == ANSWER_POOL_MIN and len(pool.questions) == len(pool.relevant)
    test_answers = {p.answer for p in load_answers("answers-ko", "test")}
    assert all(pool.answers[i] in test_answers for ids in pool.relevant for i in ids)


def test_question_parts_are_fixed_and_keep_a_question_whole() -> None:
    questions = [f"질문 {i}" for i in range(100)] + ["질문  7"]  # the same question, spaced differently
    parts = question_parts(questions)
    assert parts == question_parts(reversed(questions)) and len(parts) == 100
    assert sorted(Counter(parts.values()).items()) == [("dev", 10), ("test", 15), ("train", 75)]


# --------------------------------------------------------------------------- loaders, synthetic files
def test_malformed_rows_are_skipped_and_counted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write(tmp_path / KORSTS_TEST, KORSTS_HEADER + "g\tf\t2012\t1\t4.5\tone\ttwo\n"
          "g\tf\t2012\t2\tnine\tone\ttwo\n" "g\tf\t2012\t3\t9.0\tone\ttwo\n" "too\tfew\n\n")
    with caplog.at_level(logging.WARNING, logger="kalbert.data"):
        pairs = load_sts("korsts", "test", root=tmp_path)
    assert pairs == [STSPair("one", "two", 4.5)]
    assert "skipped 3 malformed rows (first at line 3)" in caplog.text


def test_unreadable_files(tmp_path: Path) -> None:
    write(tmp_path / KORSTS_TEST, KORSTS_HEADER.encode() + "g\tf\t2012\t1\t4.5\t한국\tb\n".encode("cp949"))
    with pytest.raises(KalbertError, match=r"sts-test.tsv line 2 is not valid UTF-8"):
        load_sts("korsts", "test", root=tmp_path)
    write(tmp_path / "bench/ko/korquad/KorQuAD_v1.0_dev.json", '{"data": [\n{"title": }]}')
    with pytest.raises(KalbertError, match=r"KorQuAD_v1.0_dev.json line 2 is not valid JSON"):
        load_qa("korquad", "dev", root=tmp_path)
    write(tmp_path / "bench/zh/xcopa/test.zh.jsonl", "not json\n{}\n")
    with pytest.raises(KalbertError, match=r"zh.jsonl no readable rows \(2 malformed, first at line 1\)"):
        load_mc("xcopa-zh", "test", root=tmp_path)
    write(tmp_path / "parallel/news.en-ko.tsv", "")
    with pytest.raises(KalbertError, match=r"news.en-ko.tsv is empty"):
        load_parallel("news-en-ko", root=tmp_path)


def test_crossed_sts_swaps_one_sentence_each_way(tmp_path: Path) -> None:
    write(tmp_path / KORSTS_TEST, KORSTS_HEADER + "g\tf\t2012\t1\t4.5\t가\t나\n" "g\tf\t2012\t2\t1.0\t다\t라\n")
    write(tmp_path / "bench/zh/stsb-mt/stsb-zh-test.csv", "甲,乙,4.5\n丙,丁,1.0\n")
    assert load_sts("stsb-ko-zh", "test", root=tmp_path) == [
        STSPair("가", "乙", 4.5), STSPair("丙", "라", 1.0),  # every row once, directions alternating
        STSPair("甲", "나", 4.5), STSPair("다", "丁", 1.0),  # then every row the other way
    ]
    write(tmp_path / "bench/zh/stsb-mt/stsb-zh-test.csv", "甲,乙,4.5\n丙,丁,2.0\n")
    with pytest.raises(KalbertError, match="are not row-aligned translations of one STS set"):
        load_sts("stsb-ko-zh", "test", root=tmp_path)


def test_loader_refuses_other_kinds() -> None:
    with pytest.raises(KalbertError, match="load_sts cannot read 'c3' \\(a mc data set\\)"):
        load_sts("c3", "dev")


def test_synthetic_mc_and_qa(tmp_path: Path) -> None:
    chid = {"id": 7, "candidates": ["甲", "乙"], "content": "他#idiom#地走了", "answer": 1}
    line = json.dumps(chid, ensure_ascii=False)
    write(tmp_path / "bench/zh/chid/dev_few_all.json", f"\ufeff{line}\r\n")
    assert load_mc("chid", "dev", root=tmp_path) == [MCExample(f"他{BLANK}地走了", "", ("甲", "乙"), 1, "7")]
    answers = [{"text": "abc", "answer_start": 7}, {"text": "zz", "answer_start": 0}]
    qas = [{"id": "q1", "question": "?", "answers": answers}]
    squad = {"data": [{"title": "T", "paragraphs": [{"context": "abc xyz abc", "qas": qas}]}]}
    write(tmp_path / "bench/zh/cmrc2018/cmrc2018_trial.json", json.dumps(squad))
    (qa,) = load_qa("cmrc2018", "trial", root=tmp_path)
    assert qa.answers == ("abc", "zz") and qa.answer_starts == (8, -1)


# ------------------------------------------------------------------------------------------ corpora
def test_iter_documents_txt_gz_and_jsonl(tmp_path: Path) -> None:
    txt = write(tmp_path / "c.txt.gz", "\ufeffdoc one, para 1\n  para 2  \n\n\n\ndoc two\r\n\n")
    jsonl = write(tmp_path / "c.jsonl", '{"text": "first\\n\\nsecond"}\n\n{"text": "third"}\nbroken\n')
    docs = list(iter_documents([txt, str(jsonl)]))
    assert docs == [["doc one, para 1", "para 2"], ["doc two"], ["first", "second"], ["third"]]
    assert list(iter_documents(txt)) == docs[:2]


def test_iter_documents_by_name(isolated: Path) -> None:
    write(isolated / "d/corpus/ko/kowiki.txt.gz", "가\n나\n\n다\n")
    assert resolve_sources(["kowiki"], root=isolated / "d") == [isolated / "d/corpus/ko/kowiki.txt.gz"]
    assert list(iter_documents("kowiki", root=isolated / "d")) == [["가", "나"], ["다"]]
    with pytest.raises(KalbertError, match="data set 'nsmc' \\(split all\\) not found"):
        resolve_sources(["kowiki", "nsmc"], root=isolated / "d")


def test_corpus_source_errors(tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.txt", "\n  \n")
    with pytest.raises(KalbertError, match="empty.txt is empty"):
        list(iter_documents([empty]))
    with pytest.raises(KalbertError, match="corpus source .*nope.txt not found"):
        resolve_sources([tmp_path / "nope.txt"])
    with pytest.raises(KalbertError, match="unsupported corpus file"):
        resolve_sources([write(tmp_path / "c.csv", "a\n")])
    with pytest.raises(KalbertError, match="'korsts' is a sts data set, not a corpus"):
        resolve_sources("korsts")
    bad = write(tmp_path / "bad.txt", b"ok\n\xff\xfe\n")
    with pytest.raises(KalbertError, match="bad.txt line 2 is not valid UTF-8"):
        list(iter_documents(bad))
