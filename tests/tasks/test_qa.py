"""Extractive QA: offsets, windows, n-best decoding, the official metrics, the fixed splits, and
`kalbert qa train|predict|evaluate` end to end with a tiny random ALBERT (seconds, on a CPU)."""

from __future__ import annotations

import json
import shlex
import unicodedata
from pathlib import Path

import pytest
import torch

from kalbert.cli.main import build_parser, main
from kalbert.data import assert_trainable, data_path, load_qa, parse_ref
from kalbert.errors import KalbertError
from kalbert.tasks.qa import Answer, align_normalized, label_window, make_windows, nbest_answers, qa_scores
from kalbert.tasks.qa.features import Window, choose_answer
from kalbert.tasks.qa.metrics import (
    _nltk_words,
    cmrc_exact,
    cmrc_f1,
    cmrc_segments,
    korquad_exact,
    korquad_f1,
    korquad_normalize,
)

REPO = Path(__file__).resolve().parents[2]
KO_CONTEXT = "대한민국의 수도는 서울특별시에 있다. 서울은 1394년 조선의 도읍이 되었다."
ZH_CONTEXT = "北京是中华人民共和国的首都，2008年举办了第29届夏季奥林匹克运动会。"


@pytest.fixture(scope="module")
def ko_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(REPO / "vocab" / "ko-32k"))


@pytest.fixture(scope="module")
def zh_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(REPO / "vocab" / "zh-32k"))


def _need(name: str, split: str) -> None:
    try:
        data_path(name, split)
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")


def _labelled_text(context: str, window: Window) -> str:
    return context[window.spans[window.start][0] : window.spans[window.end][1]]


# ------------------------------------------------------------------------------------------ offsets
def test_alignment_maps_normalised_characters_back_to_the_original():
    plain = align_normalized(KO_CONTEXT)
    assert plain.text == KO_CONTEXT and plain.original_span(0, 4) == (0, 4)
    decomposed = unicodedata.normalize("NFD", "서울\u200b특별시") + "\u3000에"
    aligned = align_normalized(decomposed)
    assert aligned.text == "서울특별시 에"
    start, end = aligned.original_span(0, 2)  # 서울, each syllable two or three jamo
    assert unicodedata.normalize("NFC", decomposed[start:end]) == "서울"
    start, end = aligned.original_span(2, 5)  # 특별시, after the dropped zero-width space
    assert unicodedata.normalize("NFC", decomposed[start:end]) == "특별시"


@pytest.mark.parametrize("lang, answer, exact", [
    ("ko", "서울특별시", True),
    ("ko", "1394년", True),
    ("ko", "서울", False),  # inside ▁서울특별시: labelled with the whole token
    ("zh", "北京", True),
    ("zh", "2008年", True),
    ("zh", "人民", False),  # inside 中华人民共和国
])
def test_labels_round_trip_to_the_answer(lang, answer, exact, ko_tokenizer, zh_tokenizer):
    tokenizer, context = (ko_tokenizer, KO_CONTEXT) if lang == "ko" else (zh_tokenizer, ZH_CONTEXT)
    (window,) = make_windows(tokenizer, ["질문?"], [context])
    start = context.index(answer)
    label_window(window, start, start + len(answer))
    assert 0 < window.start <= window.end
    text = _labelled_text(context, window)
    assert (text == answer) if exact else (answer in text and text != answer)


def test_labels_on_a_decomposed_context_point_into_the_original(ko_tokenizer):
    context = unicodedata.normalize("NFD", KO_CONTEXT)
    answer = unicodedata.normalize("NFD", "서울특별시")
    (window,) = make_windows(ko_tokenizer, ["수도는?"], [context])
    start = context.index(answer)
    label_window(window, start, start + len(answer))
    assert _labelled_text(context, window) == answer


def test_real_korquad_and_cmrc_answers_round_trip(ko_tokenizer, zh_tokenizer):
    for task, tokenizer in (("korquad", ko_tokenizer), ("cmrc2018", zh_tokenizer)):
        _need(task, "val")
        examples = [e for e in load_qa(task, "val")[:150] if e.answer_starts[0] >= 0]
        windows = make_windows(tokenizer, [e.question for e in examples], [e.context for e in examples])
        found = exact = 0
        for window in windows:
            example = examples[window.example]
            start = example.answer_starts[0]
            label_window(window, start, start + len(example.answers[0]))
            if window.start:
                text = _labelled_text(example.context, window)
                assert example.answers[0] in text
                found, exact = found + 1, exact + (text == example.answers[0])
        assert found >= len(examples) and exact / found > 0.8, (task, found, exact)


# ------------------------------------------------------------------------------------------ windows
def test_long_contexts_become_overlapping_windows(ko_tokenizer):
    context = " ".join(f"{i}번째 문장은 서울에 관한 이야기이다." for i in range(40))
    answer_at = context.index("39번째")
    windows = make_windows(ko_tokenizer, ["마지막 문장은?"], [context], max_seq_length=64, doc_stride=16)
    assert len(windows) > 3 and all(len(w.input_ids) <= 64 and w.example == 0 for w in windows)
    spans = [[s for s in w.spans if s is not None] for w in windows]
    for before, after in zip(spans, spans[1:], strict=False):
        assert before[-16:] == after[:16]  # doc_stride tokens shared
    assert spans[0][0][0] == 0 and spans[-1][-1][1] == len(context)
    for window in windows:
        label_window(window, answer_at, answer_at + len("39번째"))
    labelled = [w for w in windows if w.start]
    assert labelled and all(_labelled_text(context, w).startswith("39") for w in labelled)
    assert windows[0].start == windows[0].end == 0  # answer not in the first window: [CLS]


def test_a_stride_too_large_for_the_window_is_refused(ko_tokenizer):
    with pytest.raises(KalbertError, match="doc stride 60 leaves no room"):
        make_windows(ko_tokenizer, ["질문"], [KO_CONTEXT], max_seq_length=64, doc_stride=60)


# ------------------------------------------------------------------------------------------- n-best
def _window(spans: list[tuple[int, int] | None]) -> Window:
    return Window(0, list(range(len(spans))), [0] * len(spans), spans)


def test_nbest_picks_the_best_span_across_windows():
    context = "aa bb cc dd ee"
    first = _window([None, (0, 2), (3, 5), (6, 8), None])
    second = _window([None, (6, 8), (9, 11), (12, 14), None])
    low, high = -10.0, 10.0
    answers = nbest_answers(
        context, [first, second],
        start_logits=[[0, 1, low, low, 0], [0, low, high, low, 0]],
        end_logits=[[0, 1, low, low, 0], [0, low, low, high, 0]],
    )
    assert (answers[0].text, answers[0].start, answers[0].end) == ("dd ee", 9, 14)
    assert answers[0].score > 0.99 and answers[0].score >= answers[1].score
    assert len({(a.start, a.end) for a in answers}) == len(answers)  # cc (in both windows) once
    assert all(context[a.start : a.end] == a.text for a in answers)


def test_nbest_respects_order_and_max_answer_length():
    context = "aa bb cc dd"
    window = _window([None, (0, 2), (3, 5), (6, 8), (9, 11)])
    # the most likely end lies before the most likely start: that pair is never formed
    answers = nbest_answers(context, [window], [[0, 0, 0, 9, 0]], [[0, 9, 0, 0, 0]], max_answer_length=2)
    assert all(a.start <= a.end and len(a.text.split()) <= 2 for a in answers)
    assert answers[0].text in ("cc", "cc dd")


def test_threshold_gives_an_explicit_no_answer():
    best = Answer("서울", 0, 2, 0.3)
    assert choose_answer([best], threshold=0.2) == best
    below = choose_answer([best], threshold=0.5)
    assert not below.answered and below.text == "서울" and below.score == 0.3
    assert not choose_answer([], threshold=0.0).answered


# ------------------------------------------------------------------------------------------ metrics
def test_korquad_metric_matches_the_official_script():
    assert korquad_normalize("《토지》 (소설)") == "토지 소설"
    assert korquad_exact("‘토지’", "토지") == 1.0 and korquad_exact("The Land!", "the land") == 1.0
    assert korquad_exact("1989년 2월", "1989년2월") == 0.0  # EM keeps the space ...
    assert korquad_f1("1989년 2월", "1989년2월") == 1.0  # ... F1 counts characters without spaces
    assert korquad_f1("서울특별시", "서울") == pytest.approx(2 * (2 / 5) * 1 / (2 / 5 + 1))
    assert korquad_f1("시울서", "서울시") == 1.0  # a bag of characters: order does not matter
    assert korquad_f1("!!!", "서울") == 0.0


def test_cmrc_metric_matches_the_official_script():
    assert cmrc_segments("光荣和ω-force") == ["光", "荣", "和", "ωforce"]  # '-' removed, the run kept whole
    assert cmrc_segments("《战国无双3》") == ["战", "国", "无", "双", "3"]
    assert cmrc_segments("Hello, World") == ["hello", ",", "world"]  # ',' is not on the script's list
    assert cmrc_exact("《战国无双3》。", "战国无双3") == 1.0 and cmrc_exact("战国无双", "战国无双3") == 0.0
    assert cmrc_f1("光荣", "光荣和ω-force") == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert cmrc_f1("北京大学", "大学北京") == pytest.approx(0.5)  # longest common run, not a bag
    scores = qa_scores("cmrc2018", {"q1": "北京大学", "q2": "x"}, {"q1": ["大学北京", "北京大学"], "q2": ["y"],
                                                            "q3": ["z"]})
    assert scores == {"exact_match": pytest.approx(100 / 3), "f1": pytest.approx(100 / 3)}


def test_nltk_rules_match_nltks_own_example():
    text = "Good muffins cost $3.88 (roughly 3,36 euros)\nin New York.  Please buy me\ntwo of them.\nThanks."
    assert _nltk_words(text) == ["Good", "muffins", "cost", "$", "3.88", "(", "roughly", "3,36", "euros", ")", "in",
                                 "New", "York.", "Please", "buy", "me", "two", "of", "them.", "Thanks", "."]
    assert _nltk_words("don't stop") == ["do", "n't", "stop"]


# ------------------------------------------------------------------------------------------- splits
def test_fixed_splits_by_article_are_disjoint_and_test_is_refused():
    _need("korquad", "dev")
    _need("cmrc2018", "trial")
    for task in ("korquad", "cmrc2018"):
        parts = {split: load_qa(task, split) for split in ("train", "val", "test")}
        titles = {split: {e.title for e in rows} for split, rows in parts.items()}
        train, val, test = titles["train"], titles["val"], titles["test"]
        assert not (train & test or val & test or train & val)
        with pytest.raises(KalbertError, match=f"{task}:test is an evaluation split"):
            assert_trainable(*parse_ref(f"{task}:test"))
        assert_trainable(task, "train")
    korquad = {split: len(load_qa("korquad", split)) for split in ("train", "val", "test")}
    assert korquad == {"train": 4243, "val": 387, "test": 1144} and sum(korquad.values()) == 5774
    cmrc_train = load_qa("cmrc2018", "train")
    assert len(cmrc_train) == 3321 and sum(e.id.startswith("TRIAL") for e in cmrc_train) == 1000


# -------------------------------------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def tiny_albert(tmp_path_factory, make_tiny_albert) -> Path:
    """A random-init ALBERT pretraining checkpoint (hidden 32, 2 layers) with the Korean vocabulary."""
    return make_tiny_albert(tmp_path_factory.mktemp("tiny-albert"), REPO / "vocab" / "ko-32k")


@pytest.fixture(scope="module")
def qa_model(tiny_albert, tmp_path_factory) -> Path:
    _need("korquad", "dev")
    out = tmp_path_factory.mktemp("qa") / "korquad"
    argv = ["qa", "train", "--model", str(tiny_albert), "--task", "korquad", "--out", str(out), "--epochs", "1",
            "--batch-size", "8", "--lr", "1e-3", "--max-seq-length", "128", "--doc-stride", "32", "--max-rows", "40",
            "--max-eval-rows", "8", "--results", str(out.parent / "qa_korquad_tiny.json"), "--name", "tiny"]
    assert main(argv) == 0
    return out


def test_results_file_makes_an_extractive_qa_table(qa_model, tmp_path):
    from kalbert.bench.report import write_report

    results = qa_model.parent / "qa_korquad_tiny.json"
    meta = json.loads(results.read_text(encoding="utf-8"))
    assert {r["metric"] for r in meta["results"]} == {"exact_match", "f1"} and "--results" in meta["command"]
    write_report([results], tmp_path / "RESULTS.md")
    text = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    assert "## Extractive QA" in text and "KorQuAD 1.0 test F1" in text and "KorQuAD 1.0 test EM" in text
    assert "| tiny | kalbert | fine-tuned |" in text


def test_train_writes_a_qa_folder(qa_model, capsys):
    from transformers import AlbertForQuestionAnswering, AutoModelForQuestionAnswering

    meta = json.loads((qa_model / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["kind"] == "qa" and meta["task"] == "korquad" and meta["train_questions"] == 40
    assert meta["report"]["split"] == "test" and meta["report"]["n"] == 8 and meta["report"]["subset"]
    assert 0 <= meta["report"]["exact_match"] <= meta["report"]["f1"] <= 100
    assert meta["settings"]["max_seq_length"] == 128 and "--max-rows 40" in meta["command"]
    card = (qa_model / "README.md").read_text(encoding="utf-8")
    assert meta["command"] in card and "korquad:test" in card and "pipeline_tag: question-answering" in card
    assert isinstance(AutoModelForQuestionAnswering.from_pretrained(str(qa_model)), AlbertForQuestionAnswering)
    again = ["qa", "train", "--model", meta["config"]["model"], "--task", "korquad", "--out", str(qa_model)]
    assert main([*again, "--max-seq-length", "128"]) == 2
    assert "already exists" in capsys.readouterr().err


def test_predict_returns_a_substring_of_the_context(qa_model, tmp_path, capsys):
    long_context = KO_CONTEXT + " " + "한강은 서울을 가로지른다. " * 30  # several 128-token windows
    assert main(["qa", "predict", "--model", str(qa_model), "--context", long_context, "--question", "수도는?"]) == 0
    answer, score = capsys.readouterr().out.splitlines()
    assert answer and answer in long_context and score.startswith("score ")

    items = [{"context": KO_CONTEXT, "question": "수도는?"}, {"context": ZH_CONTEXT, "question": "首都是哪里？"}]
    batch = tmp_path / "q.jsonl"
    batch.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
    assert main(["qa", "predict", "--model", str(qa_model), "--jsonl", str(batch), "--out", str(tmp_path / "a.jsonl"),
                 "--threshold", "1.0"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()]
    for item, row in zip(items, rows, strict=True):
        assert row["answer"] is None  # nothing reaches probability 1
        assert row["span"] == item["context"][row["start"] : row["end"]] and 0 < row["score"] < 1


def test_evaluate_writes_scores_and_predictions(qa_model, tmp_path, capsys):
    out = tmp_path / "results.json"
    argv = ["qa", "evaluate", "--model", str(qa_model), "--task", "korquad", "--split", "val", "--max-rows", "6"]
    assert main([*argv, "--out", str(out)]) == 0
    assert "korquad:val: EM" in capsys.readouterr().out
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["split"] == "val" and result["n"] == 6 and len(result["predictions"]) == 6


def test_export_stores_float16_weights_that_answer_the_same(qa_model, tmp_path, capsys):
    from safetensors.torch import load_file

    from kalbert.tasks.qa import QAModel

    out = tmp_path / "half"
    assert main(["qa", "export", "--model", str(qa_model), "--out", str(out)]) == 0
    assert "probe answers unchanged" in capsys.readouterr().out
    assert {t.dtype for t in load_file(out / "model.safetensors").values() if t.is_floating_point()} == {torch.float16}
    assert (out / "model.safetensors").stat().st_size < 0.6 * (qa_model / "model.safetensors").stat().st_size
    meta = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))
    assert meta["weights_storage"]["dtype"] == "float16" and meta["report"] == json.loads(
        (qa_model / "kalbert.json").read_text(encoding="utf-8"))["report"]
    assert "Weights stored as float16" in (out / "README.md").read_text(encoding="utf-8")
    half = QAModel(out, precision="fp32")
    assert next(half.model.parameters()).dtype == torch.float32
    full = QAModel(qa_model, precision="fp32")
    question, context = "수도는?", KO_CONTEXT
    assert half.answer([question], [context])[0].text == full.answer([question], [context])[0].text
    assert main(["qa", "export", "--model", str(qa_model), "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err


def test_shipped_qa_model_answers_korean_and_chinese_questions():
    """models/qa-ko-zh-small, one model for both languages, on questions written for this test."""
    from kalbert.tasks.qa import QAModel

    qa = QAModel(REPO / "models" / "qa-ko-zh-small")
    contexts = ["세종대왕은 1446년에 훈민정음을 반포하였다.", "北京是中华人民共和国的首都，2008年举办了夏季奥运会。",
                "长江是亚洲第一长河，全长约6300公里，最后注入东海。"]
    answers = qa.answer(["훈민정음을 반포한 해는?", "北京在哪一年举办了奥运会？", "长江最后注入哪里？"], contexts)
    assert [a.text for a in answers] == ["1446년", "2008年", "东海"]


def test_errors_exit_2(qa_model, tiny_albert, tmp_path, capsys):
    predict = ["qa", "predict", "--model"]
    assert main([*predict, str(tiny_albert), "--context", KO_CONTEXT, "--question", "수도는?"]) == 2
    assert "is a pretrained model folder; --model takes a QA model folder" in capsys.readouterr().err
    assert main([*predict, str(qa_model), "--context", KO_CONTEXT, "--question", "  "]) == 2
    assert "empty question" in capsys.readouterr().err
    assert main([*predict, str(qa_model), "--context", KO_CONTEXT]) == 2
    assert "give --context and --question" in capsys.readouterr().err
    (tmp_path / "bad.jsonl").write_text('{"context": "c", "question": "q"}\n{"context": 1}\n', encoding="utf-8")
    assert main([*predict, str(qa_model), "--jsonl", str(tmp_path / "bad.jsonl")]) == 2
    assert "bad.jsonl line 2 is not a JSON object" in capsys.readouterr().err
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}', encoding="utf-8")
    assert main(["qa", "train", "--model", str(tmp_path), "--task", "korquad", "--out", str(tmp_path / "o")]) == 2
    assert "not one of albert, bert" in capsys.readouterr().err
    assert main(["qa", "train", "--model", str(tiny_albert), "--task", "korquad", "--out", str(tmp_path / "o"),
                 "--max-seq-length", "256"]) == 2
    assert "exceeds the model's 128 positions" in capsys.readouterr().err
    assert main(["qa", "evaluate", "--model", str(qa_model), "--task", "korquad", "--split", "nope"]) == 2
    assert "unknown split 'nope'" in capsys.readouterr().err


def test_every_qa_verb_help_ends_with_a_working_example(capsys):
    for verb in ("train", "predict", "export", "evaluate"):
        with pytest.raises(SystemExit) as exited:
            main(["qa", verb, "--help"])
        assert exited.value.code == 0
        example = capsys.readouterr().out.split("example:\n  ")[1].strip()
        args = build_parser().parse_args(shlex.split(example)[1:])
        assert (args.noun, args.verb) == ("qa", verb)
