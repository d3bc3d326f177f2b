"""Bad input as a new user gives it (issue 54): every verb refuses a wrong folder kind, a missing path, an existing
output, an out-of-range number, a non-UTF-8 config or an unknown name in one line on stderr with exit code 2,
before any model loads or any teacher encodes, and leaves nothing written and no cache touched."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kalbert.artifact import Kind
from kalbert.cli.common import check_args
from kalbert.cli.main import build_parser, main
from kalbert.errors import KalbertError
from kalbert.io import atomic_output_dir, kalbert_cache

ROOT = Path(__file__).resolve().parents[1]
FOLDER_KINDS = [*(kind.value for kind in Kind), "unrecognised"]
"""every folder kind a verb may be handed, and a folder with no record"""
SENTENCE_TRANSFORMERS = {Kind.SENTENCE_MODEL, Kind.TEACHER, Kind.STATIC_MODEL}
"""kinds whose folders load with SentenceTransformer (they hold modules.json)"""


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """One tiny folder per kind: a ``kalbert.json`` naming it (and ``modules.json`` where the real ones have one)."""
    root = tmp_path_factory.mktemp("kinds")
    made = {}
    for kind in FOLDER_KINDS:
        folder = root / kind
        folder.mkdir()
        if kind != "unrecognised":
            (folder / "kalbert.json").write_text(json.dumps({"kind": kind, "languages": ["ko"]}), encoding="utf-8")
        if kind in SENTENCE_TRANSFORMERS:
            (folder / "modules.json").write_text("[]", encoding="utf-8")
        made[kind] = folder
    return made


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    """``kalbert ARGV`` in-process: exit code, stdout, stderr (usage errors exit through SystemExit)."""
    try:
        code = main(argv)
    except SystemExit as exited:
        code = int(exited.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _cache_listing() -> list[str]:
    cache = kalbert_cache()
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*")) if cache.exists() else []


def _refused(argv: list[str], capsys, *expected: str) -> str:
    """Assert that ``argv`` is refused the house way and returns its one stderr line."""
    before = _cache_listing()
    code, out, err = _run(argv, capsys)
    assert code == 2, (argv, out, err)
    assert err.count("\n") == 1 and err.startswith("kalbert"), err
    assert "Traceback" not in err
    for text in expected:
        assert text in err, err
    assert _cache_listing() == before
    return err


# (command with {F} where the folder goes, flag, kinds it takes). Data folders stand in for the other inputs.
MATRIX = [
    ("sbert train --model {F} --out {O}", "--model", {Kind.SENTENCE_MODEL, Kind.PRETRAINED_MODEL}),
    ("sbert export --model {F} --out {O}", "--model", {Kind.SENTENCE_MODEL, Kind.PRETRAINED_MODEL}),
    ("sbert distill --student {F} --corpus kowiki --out {O}", "--student",
     {Kind.SENTENCE_MODEL, Kind.PRETRAINED_MODEL}),
    ("sbert distill --student {sentence-model} --teacher {F} --corpus kowiki --out {O}", "--teacher",
     {Kind.SENTENCE_MODEL, Kind.TEACHER}),
    ("sbert mine --teacher {F} --corpus kowiki --out {O}", "--teacher", {Kind.SENTENCE_MODEL, Kind.TEACHER}),
    ("sbert average --models {sentence-model} {F} --out {O}", "--models", {Kind.SENTENCE_MODEL}),
    ("static distill --vocab {F} --out {O}", "--vocab", {Kind.VOCAB}),
    ("static distill --vocab {vocab} --teacher {F} --out {O}", "--teacher", {Kind.SENTENCE_MODEL, Kind.TEACHER}),
    ("static train --init {F} --out {O}", "--init", {Kind.STATIC_MODEL}),
    ("teacher encode --teacher {F} --corpus kowiki", "--teacher", {Kind.SENTENCE_MODEL, Kind.TEACHER}),
    ("teacher finetune --teacher {F} --out {O}", "--teacher", {Kind.SENTENCE_MODEL, Kind.TEACHER}),
    ("transplant --teacher {F} --vocab {vocab} --out {O}", "--teacher",
     {Kind.SENTENCE_MODEL, Kind.TEACHER, Kind.PRETRAINED_MODEL}),
    ("transplant --teacher {teacher} --vocab {F} --out {O}", "--vocab", {Kind.VOCAB}),
    ("data build --vocab {F} --inputs kowiki --out {O}", "--vocab", {Kind.VOCAB}),
    ("pretrain --data {F} --out {O}", "--data", {Kind.PRETRAINING_DATA}),
    ("pretrain --data {pretraining-data} --init-from {F} --out {O}", "--init-from", {Kind.PRETRAINED_MODEL}),
    ("pretrain --data {pretraining-data} --distill-teacher {F} --out {O}", "--distill-teacher",
     {Kind.SENTENCE_MODEL, Kind.TEACHER}),
    ("mc train --model {F} --task kobest-copa --out {O}", "--model",
     {Kind.PRETRAINED_MODEL, Kind.TEACHER, Kind.SENTENCE_MODEL, Kind.QA_MODEL, Kind.MC_MODEL}),
    ("mc average --models {multiple-choice} {F} --out {O}", "--models", {Kind.MC_MODEL}),
    ("mc predict --model {F} --context x --choices a b", "--model", {Kind.MC_MODEL}),
    ("qa train --model {F} --task korquad --out {O}", "--model",
     {Kind.PRETRAINED_MODEL, Kind.TEACHER, Kind.SENTENCE_MODEL, Kind.QA_MODEL, Kind.MC_MODEL}),
    ("qa predict --model {F} --context x --question y", "--model", {Kind.QA_MODEL}),
    ("qa export --model {F} --out {O}", "--model", {Kind.QA_MODEL}),
    ("qa evaluate --model {F} --task korquad", "--model", {Kind.QA_MODEL}),
    ("vocab extend --base {F} --out {O}", "--base", {Kind.VOCAB, Kind.PRETRAINED_MODEL, Kind.SENTENCE_MODEL,
                                                     Kind.STATIC_MODEL, Kind.TEACHER, Kind.QA_MODEL, Kind.MC_MODEL}),
]


def _argv(template: str, folder: Path, folders: dict[str, Path], out: Path) -> list[str]:
    values = {f"{{{kind}}}": str(path) for kind, path in folders.items()} | {"{F}": str(folder), "{O}": str(out)}
    return [values.get(word, word) for word in template.split()]


@pytest.mark.parametrize(("template", "flag", "takes"), MATRIX, ids=[f"{t.split(' -')[0]} {f}" for t, f, _ in MATRIX])
def test_every_model_taking_verb_refuses_every_other_folder_kind(template, flag, takes, folders, tmp_path, capsys):
    out = tmp_path / "out"
    for kind, folder in folders.items():
        argv = _argv(template, folder, folders, out)
        if kind in takes:  # the same check the CLI runs passes; the verb itself would then load the fake folder
            check_args(build_parser(argv).parse_args(argv))
            continue
        err = _refused(argv, capsys, str(folder))
        assert flag in err or "teacher" in err, err
        assert not out.exists()


def test_a_missing_folder_or_a_file_is_refused_as_such(folders, tmp_path, capsys):
    _refused(["sbert", "train", "--model", str(tmp_path / "nope"), "--out", str(tmp_path / "o")], capsys,
             "folder not found", "sentence-model")
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"")
    _refused(["mc", "predict", "--model", str(weights), "--context", "x", "--choices", "a", "b"], capsys,
             "is a file")


def test_a_pretraining_run_points_to_its_model(folders, tmp_path, capsys):
    _refused(["qa", "train", "--model", str(folders[Kind.PRETRAINING_RUN]), "--task", "korquad",
              "--out", str(tmp_path / "o")], capsys, str(folders[Kind.PRETRAINING_RUN] / "model"))


def test_folders_made_elsewhere_are_known_by_their_files(tmp_path):
    from kalbert.artifact import folder_kind

    (tmp_path / "qa").mkdir()
    (tmp_path / "qa" / "config.json").write_text('{"architectures": ["AlbertForQuestionAnswering"]}')
    (tmp_path / "st").mkdir()
    (tmp_path / "st" / "modules.json").write_text("[]")
    assert folder_kind(tmp_path / "qa") == Kind.QA_MODEL and folder_kind(tmp_path / "st") == Kind.SENTENCE_MODEL
    assert folder_kind(ROOT / "vocab/ko-32k") == Kind.VOCAB and folder_kind(tmp_path) is None


# The cases, one by one.

def test_negative_learning_rate_is_refused_before_the_model_loads(tmp_path, capsys):
    _refused(["sbert", "train", "--model", str(ROOT / "models/sbert-ko-zh-small"), "--train", "korsts", "--lr", "-1",
              "--out", str(tmp_path / "x")], capsys, "--lr", "above 0")
    config = tmp_path / "sts.yaml"
    config.write_text("lr: -1\nwarmup_ratio: 1.5\n", encoding="utf-8")
    _refused(["sbert", "train", "--config", str(config), "--model", str(ROOT / "models/sbert-ko-zh-small"),
              "--out", str(tmp_path / "x")], capsys, "lr must be a number above 0")
    assert not (tmp_path / "x").exists()


def test_a_repeat_of_a_set_not_trained_on_is_refused_before_the_model_loads(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("kalbert.sentence.train.load_sentence_model", lambda *a, **k: pytest.fail("model loaded"))
    _refused(["sbert", "train", "--model", str(ROOT / "models/sbert-ko-zh-small"), "--train", "korsts",
              "--repeat", "answers-ko=3", "--out", str(tmp_path / "x")], capsys,
             "answers-ko is not among the training sets")
    assert not (tmp_path / "x").exists()


def test_probabilities_are_refused_out_of_range(tmp_path, capsys):
    _refused(["data", "build", "--vocab", str(ROOT / "vocab/ko-32k"), "--inputs", "kowiki", "--heldout-fraction",
              "1.5", "--out", str(tmp_path / "d")], capsys, "from 0 to 1")
    _refused(["qa", "predict", "--model", str(ROOT / "models/qa-ko-zh-small"), "--context", "x", "--question", "y",
              "--threshold", "2"], capsys, "from 0 to 1")


def test_a_config_file_that_is_not_utf8_is_one_line(tmp_path, capsys):
    config = tmp_path / "bad.yaml"
    config.write_bytes(b"\xff\xfe\x00")
    _refused(["sbert", "train", "--config", str(config), "--model", str(ROOT / "models/sbert-ko-zh-small"),
              "--out", str(tmp_path / "x")], capsys, "not UTF-8")


def test_a_static_model_is_no_sts_starting_point(tmp_path, capsys):
    _refused(["sbert", "train", "--model", str(ROOT / "models/static-ko-zh-48k"), "--train", "korsts",
              "--out", str(tmp_path / "x")], capsys, "static model folder", "--model takes a sentence-model")


def test_mc_predict_takes_only_a_multiple_choice_model_and_real_choices(capsys):
    qa, context = str(ROOT / "models/qa-ko-zh-small"), "전쟁이 시작되었다."
    _refused(["mc", "predict", "--model", qa, "--context", context, "--question", "결과", "--choices", "A", "B"],
             capsys, "QA model folder", "multiple-choice model")


@pytest.mark.parametrize("choices", [["", "b"], ["a", "a"], ["a"]], ids=["empty", "twice", "one"])
def test_mc_predict_choices_are_two_or_more_distinct_answers(choices, folders, capsys):
    _refused(["mc", "predict", "--model", str(folders[Kind.MC_MODEL]), "--context", "x", "--choices", *choices],
             capsys, "--choices")


def test_distill_refuses_a_missing_student_before_the_teacher_encodes(tmp_path, capsys):
    _refused(["sbert", "distill", "--student", "/does/not/exist", "--teacher", "multilingual-e5-small",
              "--corpus", "kowiki", "--max-sentences", "50000", "--out", str(tmp_path / "x")], capsys,
             "/does/not/exist", "folder not found")
    assert not list(tmp_path.iterdir())


def test_distill_from_python_checks_the_same_inputs(tmp_path):
    from kalbert.sentence.config import DistillConfig
    from kalbert.sentence.distill import distill_student

    with pytest.raises(KalbertError, match="folder not found"):
        distill_student(DistillConfig(student="/does/not/exist", corpus=["kowiki"], out=str(tmp_path / "x")))
    assert not list(tmp_path.iterdir())


def test_an_unknown_teacher_fails_at_once_naming_the_known_ones(monkeypatch, capsys):
    import huggingface_hub

    def no_network(*args, **kwargs):
        raise AssertionError("the hub was asked")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", no_network)
    err = _refused(["teacher", "encode", "--teacher", "nonsense-teacher", "--corpus", "kowiki"], capsys,
                   "unknown teacher 'nonsense-teacher'", "multilingual-e5-small", "use-multilingual",
                   "all-MiniLM-L6-v2")
    assert "did you mean" not in err
    _refused(["teacher", "encode", "--teacher", "multilingual-e5-smal", "--corpus", "kowiki"], capsys,
             "unknown teacher 'multilingual-e5-smal'", "did you mean 'multilingual-e5-small'?")


def test_an_unknown_data_set_says_which_it_resembles(tmp_path, capsys):
    model = str(ROOT / "models/sbert-ko-zh-small")
    _refused(["sbert", "train", "--model", model, "--train", "korsst", "--out", str(tmp_path / "x")], capsys,
             "unknown data set 'korsst'", "did you mean 'korsts'")
    _refused(["data", "build", "--vocab", str(ROOT / "vocab/ko-32k"), "--inputs", "kowik", "--out",
              str(tmp_path / "d")], capsys, "unknown data set 'kowik'", "did you mean 'kowiki'")
    _refused(["data", "build", "--vocab", str(ROOT / "vocab/ko-32k"), "--inputs", str(tmp_path / "corpus.txt"),
              "--out", str(tmp_path / "d")], capsys, "file not found")


def test_data_questions_names_the_sets_it_takes(tmp_path, capsys):
    err = _refused(["data", "questions", "--sets", "korsts", "--out", str(tmp_path / "q.txt")], capsys,
                   "'korsts' is a sts data set", "korquad")
    assert "e.g. korsts" not in err
    assert not (tmp_path / "q.txt").exists()


def test_data_build_refuses_a_model_as_its_vocabulary(tmp_path, capsys):
    _refused(["data", "build", "--vocab", str(ROOT / "models/static-ko-zh-48k"), "--inputs", "kowiki",
              "--out", str(tmp_path / "d")], capsys, "static model folder", "--vocab takes a vocab folder")
    assert not (tmp_path / "d").exists()


def test_qa_predict_keeps_an_existing_out_and_needs_jsonl_for_it(tmp_path, capsys):
    qa = str(ROOT / "models/qa-ko-zh-small")
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"context": "서울은 수도이다.", "question": "수도는?"}\n', encoding="utf-8")
    answers = tmp_path / "answers.jsonl"
    answers.write_text("keep me\n", encoding="utf-8")
    _refused(["qa", "predict", "--model", qa, "--jsonl", str(questions), "--out", str(answers)], capsys,
             "already exists", "--overwrite")
    assert answers.read_text(encoding="utf-8") == "keep me\n"
    _refused(["qa", "predict", "--model", qa, "--context", "x", "--question", "y", "--out", str(tmp_path / "a")],
             capsys, "--out is only written with --jsonl")
    _refused(["qa", "evaluate", "--model", qa, "--task", "korquad", "--out", str(answers)], capsys, "already exists")


def test_an_existing_out_folder_is_refused_before_work(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    _refused(["sbert", "train", "--model", str(ROOT / "models/sbert-ko-zh-small"), "--out", str(out)], capsys,
             "already exists", "--overwrite")
    blocker = tmp_path / "file"
    blocker.write_text("")
    _refused(["static", "distill", "--vocab", str(ROOT / "vocab/ko-32k"), "--out", str(blocker / "sub")], capsys,
             "is a file")


def test_vocab_inspect_without_text_says_what_to_give(capsys):
    _refused(["vocab", "inspect", str(ROOT / "vocab/ko-32k")], capsys, "nothing to inspect", "--eval")


def test_output_folders_are_readable_by_others(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_output_dir(tmp_path / "artifact") as tmp:
            (tmp / "x").write_text("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "artifact").stat().st_mode) == 0o755


def test_usage_errors_are_one_line(capsys):
    code, _, err = _run(["sbert"], capsys)
    assert code == 2 and err.count("\n") == 1 and "choose a verb: export, train, distill" in err


@pytest.mark.parametrize("noun", ["sbert", "qa", "mc", "static", "teacher", "data", "vocab"])
def test_noun_help_ends_with_an_example(noun, capsys):
    code, out, _ = _run([noun, "--help"], capsys)
    assert code == 0 and f"examples:\n  kalbert {noun} " in out


def test_help_speaks_command_line_not_python(capsys):
    _, out, _ = _run(["sbert", "train", "--help"], capsys)
    assert "['" not in out and "None:" not in out and "``" not in out
    assert "(default: korsts:train)" in out and "--pooling" in out


USAGE = [["sbert"], ["sbert", "--help"], ["qa"], ["mc", "--help"], ["static"], ["teacher", "--help"], ["data"],
         ["--help"], ["sbert", "export", "--help"], ["qa", "predict", "--help"], ["mc", "predict", "--help"],
         ["teacher", "encode", "--help"], ["sbert", "train", "--help"], ["sbert", "distill", "--help"],
         ["static", "train", "--help"], ["teacher", "finetune", "--help"], ["pretrain", "--help"],
         ["transplant", "--help"]]


@pytest.mark.parametrize("argv", USAGE, ids=" ".join)
def test_usage_imports_no_torch(argv):
    """A usage line or help text comes without torch or sentence-transformers: checked by what got imported in a
    fresh interpreter, never by timing."""
    probe = ("import sys\nfrom kalbert.cli.main import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n"
             "    pass\nprint(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules)"
             ", file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120)
    assert result.stderr.strip().splitlines()[-1] == "[]", result.stderr
