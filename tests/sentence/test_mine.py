"""`kalbert sbert mine`: teacher-graded pairs from a tiny corpus, with no evaluation sentence in them, a clear
error when the corpus yields fewer pairs than asked, training on the file, and the teacher's lineage."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pytest

from kalbert.cli.main import main
from kalbert.data import load_sts
from kalbert.data.heldout import drop_heldout
from kalbert.data.loaders import load_sts_file
from kalbert.lineage import record_beside, training_splits
from kalbert.sentence.mine import flat_choice, nearest_neighbours

SUBJECTS = ["영화", "배우", "감독", "음악", "이야기", "주인공"]
PREDICATES = ["정말 훌륭하고 감동적이었다", "너무 지루해서 잠이 들었다", "기대보다 훨씬 좋았다",
              "다시 보고 싶을 만큼 재미있었다", "조금 아쉬운 부분이 있었다", "끝까지 긴장감이 넘쳤다"]


@pytest.fixture
def leaked(tiny_data) -> str:
    """A KorSTS test sentence: evaluation data that must never reach a mined pair."""
    return load_sts("korsts", "test")[0].sentence1


@pytest.fixture
def corpus(tmp_path, leaked):
    """36 short Korean reviews, one spacing variant of the first, and the KorSTS test sentence, blank-line separated."""
    sentences = [f"이 {subject}는 {predicate}." for subject in SUBJECTS for predicate in PREDICATES]
    path = tmp_path / "reviews.txt"
    path.write_text("\n\n".join([*sentences, sentences[0].replace(" ", "", 1), leaked])
                    + "\n", encoding="utf-8")
    return path


def _mine(teacher, corpus, out, *extra: str) -> int:
    return main(["sbert", "mine", "--teacher", str(teacher), "--corpus", str(corpus), "--max-sentences", "100",
                 "--neighbours", "3", "--duplicate-cosine", "0.99999", "--cache-dir", str(out.parent / "cache"),
                 "--out", str(out), *extra])


def test_mined_pairs_hold_no_evaluation_sentence_and_span_the_scale(tiny_sbert, corpus, leaked, tmp_path, capsys):
    out = tmp_path / "mined" / "reviews.tsv"
    assert _mine(tiny_sbert, corpus, out, "--pairs", "40") == 0
    assert "mined pairs" in capsys.readouterr().out
    pairs = load_sts_file(out)
    sentences = [s for pair in pairs for s in (pair.sentence1, pair.sentence2)]
    assert len(pairs) == 40 and leaked not in sentences and drop_heldout(sentences)[1] == 0
    assert all(pair.sentence1 != pair.sentence2 for pair in pairs)
    assert len({frozenset((pair.sentence1, pair.sentence2)) for pair in pairs}) == 40
    scores = [pair.score for pair in pairs]
    assert min(scores) == 0 and max(scores) == 5
    record = json.loads(record_beside(out).read_text(encoding="utf-8"))
    assert record["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert record["sample"]["heldout_dropped"] == 1 and record["sample"]["same_but_spacing_merged"] == {"ko": 1}
    assert record["pairs"]["per_language"] == {"ko": 40} and sum(record["score_histogram"]["counts"]) == 40
    assert record["pairs"]["from_neighbours"] + record["pairs"]["random"] == 40
    assert record["teacher"]["fingerprint"] and record["training_splits"] == [] and "hardware" in record
    assert _mine(tiny_sbert, corpus, out, "--pairs", "40") == 2  # exists, no --overwrite


def test_fewer_pairs_than_asked_is_an_error_that_says_how_many(tiny_sbert, corpus, tmp_path, capsys):
    out = tmp_path / "few.tsv"
    assert _mine(tiny_sbert, corpus, out, "--pairs", "5000") == 2
    error = capsys.readouterr().err
    found = int(error.split("found ")[1].split(" of")[0])
    assert 0 < found < 5000 and "of the 5000 pairs asked" in error and f"--pairs {found}" in error
    assert not out.exists() and not record_beside(out).exists()
    assert _mine(tiny_sbert, corpus, out, "--pairs", "5000", "--allow-fewer") == 0
    assert f"found {found} of the 5000 pairs asked" in capsys.readouterr().out
    assert len(load_sts_file(out)) == found


def test_sts_trains_on_a_mined_file_but_not_on_one_with_evaluation_sentences(tiny_sbert, corpus, leaked, tmp_path,
                                                                              capsys):
    mined = tmp_path / "mined.tsv"
    assert _mine(tiny_sbert, corpus, mined, "--pairs", "40") == 0
    out = tmp_path / "student"
    assert main(["sbert", "train", "--model", str(tiny_sbert), "--train", str(mined), "--out", str(out),
                 "--max-steps", "2", "--batch-size", "16", "--lr", "1e-3"]) == 0
    stage = json.loads((out / "kalbert.json").read_text(encoding="utf-8"))["stages"][-1]
    assert stage["config"]["train"] == [str(mined)]
    leaky = tmp_path / "leaky.tsv"
    leaky.write_text(f"sentence1\tsentence2\tscore\n{leaked}\t이 영화는 정말 훌륭하고 감동적이었다.\t2.0\n",
                     encoding="utf-8")
    assert main(["sbert", "train", "--model", str(tiny_sbert), "--train", str(leaky), "--out",
                 str(tmp_path / "never")]) == 2
    assert "holds 1 sentences that evaluation splits score" in capsys.readouterr().err
    assert not list(tmp_path.glob("never*"))


def test_a_student_of_mined_pairs_inherits_the_teacher_lineage(tiny_sbert, corpus, tmp_path, capsys):
    teacher = tmp_path / "teacher"
    shutil.copytree(tiny_sbert, teacher)
    meta = json.loads((teacher / "kalbert.json").read_text(encoding="utf-8"))
    meta["stages"].append({"stage": "sts", "config": {"train": ["korsts:dev"]}})
    (teacher / "kalbert.json").write_text(json.dumps(meta), encoding="utf-8")
    mined = tmp_path / "mined.tsv"
    assert _mine(teacher, corpus, mined, "--pairs", "40") == 0
    assert "korsts:dev" in json.loads(record_beside(mined).read_text(encoding="utf-8"))["training_splits"]
    assert main(["sbert", "train", "--model", str(tiny_sbert), "--train", str(mined), "--eval", "korsts:dev",
                 "--out", str(tmp_path / "never")]) == 2
    assert "labelled by a teacher trained on korsts:dev" in capsys.readouterr().err
    student = tmp_path / "student"
    student.mkdir()
    (student / "kalbert.json").write_text(json.dumps({"stages": [{"stage": "sts", "config": {
        "model": str(tiny_sbert), "train": [str(mined)]}}]}), encoding="utf-8")
    assert "korsts:dev" in training_splits(student)


def test_neighbours_skip_near_duplicates_and_the_choice_is_flat():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(300, 8)).astype(np.float32)
    vectors[1] = vectors[0]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    indices, cosines = nearest_neighbours(vectors, 4, 0.98, block_bytes=4 * 300 * 7, progress=False)
    full = vectors @ vectors.T
    full[(full > 0.98) | np.eye(300, dtype=bool)] = -np.inf
    assert np.allclose(cosines, -np.sort(-full, axis=1)[:, :4], atol=1e-6)  # nearest first (rows 0, 1 tie)
    assert np.allclose(np.take_along_axis(full, indices, axis=1), cosines, atol=1e-6) and 1 not in indices[0]
    values = np.concatenate([np.full(5, 0.05), np.full(100, 0.55), np.full(100, 0.95)])
    edges = np.linspace(0, 1, 4)
    chosen = flat_choice(values, edges, 65, rng)
    assert len(set(chosen)) == 65 and np.histogram(values[chosen], edges)[0].tolist() == [5, 30, 30]
    assert len(flat_choice(values, np.linspace(0, 1, 11), 500, rng)) == 205
