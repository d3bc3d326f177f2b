"""`kalbert bench run` end to end with the TF-IDF baseline on real data, and its refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kalbert.bench import load_encoder, read_results, run_bench, select_tasks
from kalbert.bench.runner import load_task
from kalbert.cli.main import main
from kalbert.data import data_path, roots
from kalbert.errors import KalbertError


def need(name: str, split: str) -> None:
    try:
        data_path(name, split)
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")


def test_tfidf_reproduces_the_published_korsts_number():
    need("korsts", "test")
    results = run_bench(load_encoder("tfidf"), select_tasks("korsts"), command="test")
    values = {r["metric"]: r["value"] for r in results.results}
    assert values["spearman"] == pytest.approx(65.9, abs=0.5)
    assert results.results[0]["n"] == 1379 and results.results[0]["split"] == "test"
    assert results.settings["fit_on"] == {"ko": "korsts:train", "zh": "stsb-zh:train"}


def test_each_distinct_sentence_is_encoded_once():
    need("kobest-copa", "test")
    (task,) = select_tasks("kobest-copa")
    data = load_task(task)
    assert len(data.sentences) == len(set(data.sentences))
    assert len(data.left) == 2 * len(data.gold) and data.n_choices == 2


def test_cli_writes_a_versioned_results_file(tmp_path, capsys):
    need("klue-sts", "dev")
    out = tmp_path / "tfidf.json"
    assert main(["bench", "run", "--model", "tfidf", "--tasks", "klue-sts", "--out", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["format"] == "kalbert-bench/1" and data["model_kind"] == "baseline"
    assert data["command"] == f"kalbert bench run --model tfidf --tasks klue-sts --out {out}"
    record = data["results"][0]
    assert {"task", "split", "metric", "value", "n", "wall_seconds"} <= record.keys()
    assert (record["task"], record["split"], record["n"]) == ("klue-sts", "dev", 519)
    assert record["value"] == pytest.approx(32.8, abs=0.5)
    assert read_results(out).kalbert_version == data["kalbert_version"]
    assert "klue-sts" in capsys.readouterr().out


def test_a_killed_run_resumes_after_its_last_finished_task(tmp_path, monkeypatch, capsys):
    need("klue-sts", "dev")
    need("korsts", "test")
    from kalbert.bench import runner

    out, evaluated = tmp_path / "tfidf.json", []
    real = runner.evaluate

    def evaluate(encoder, task, *args):
        evaluated.append(task.name)
        if len(evaluated) == 2 and not (out.parent / "resume").exists():
            raise KeyboardInterrupt  # killed during the second task
        return real(encoder, task, *args)

    monkeypatch.setattr(runner, "evaluate", evaluate)
    argv = ["bench", "run", "--model", "tfidf", "--tasks", "korsts,klue-sts", "--out", str(out)]
    assert main(argv) == 130  # "interrupted ... rerun the same command to resume"
    partial = json.loads((tmp_path / "tfidf.json.partial").read_text(encoding="utf-8"))
    assert list(partial["records"]) == ["korsts"] and not out.exists()

    (out.parent / "resume").touch()
    evaluated.clear()
    assert main(argv) == 0
    assert evaluated == ["klue-sts"]  # the finished task is not run again
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [r["task"] for r in data["results"]] == ["korsts", "korsts", "klue-sts", "klue-sts"]
    assert data["results"][:2] == partial["records"]["korsts"] and data["wall_seconds"] >= partial["seconds"]
    assert not (tmp_path / "tfidf.json.partial").exists()


def test_another_runs_finished_tasks_are_not_taken(tmp_path):
    from kalbert.bench.finished import FinishedTasks, run_key

    out = tmp_path / "r.json"
    FinishedTasks.open(out, run_key("kalbert bench run --model a", None, None)).add("korsts", [{"value": 1}], 5.0)
    assert FinishedTasks.open(out, run_key("kalbert bench run --model a", None, None)).records == {
        "korsts": [{"value": 1}]}
    assert FinishedTasks.open(out, run_key("kalbert bench run --model b", None, None)).records == {}
    assert FinishedTasks.open(out, run_key("kalbert bench run --model a", {"w": "x"}, None)).records == {}


def test_a_folder_that_is_not_a_sentence_model_is_refused(tmp_path, capsys):
    (tmp_path / "config.json").write_text('{"model_type": "albert"}', encoding="utf-8")
    assert main(["bench", "run", "--model", str(tmp_path), "--tasks", "korsts", "--out", str(tmp_path / "r.json")]) == 2
    assert "not a sentence model" in capsys.readouterr().err
    assert main(["bench", "run", "--model", str(tmp_path / "nope"), "--out", str(tmp_path / "r.json")]) == 2
    assert "not found" in capsys.readouterr().err


def test_a_missing_data_set_is_the_registrys_error(tmp_path, monkeypatch):
    monkeypatch.setattr(roots, "_BESIDE_CHECKOUT", tmp_path / "none")
    monkeypatch.setenv("KALBERT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(KalbertError, match=r"data set 'klue-sts' \(split dev\) not found"):
        run_bench(load_encoder("tfidf"), select_tasks("klue-sts"), command="test")


def test_sentence_model_path_on_a_slice():
    """The dense path (a SentenceTransformer folder: the packaged MiniLM) on the first 40 KorSTS pairs."""
    need("korsts", "test")
    from kalbert.bench.runner import TaskData, evaluate

    (task,) = select_tasks("korsts")
    full = load_task(task)
    left, right = full.left[:40], full.right[:40]
    keep = sorted(set(left) | set(right))
    remap = {old: new for new, old in enumerate(keep)}
    data = TaskData(
        [full.sentences[i] for i in keep],
        np.array([remap[i] for i in left]),
        np.array([remap[i] for i in right]),
        full.gold[:40],
    )
    encoder = load_encoder("minilm")
    assert (encoder.name, encoder.kind, encoder.path) == ("all-MiniLM-L6-v2", "baseline", None)
    records = evaluate(encoder, task, data)
    assert [r["metric"] for r in records] == ["spearman", "pearson"]
    assert all(r["n"] == 40 and -100 <= r["value"] <= 100 for r in records)


def test_retrieval_accuracy_counts_each_direction_apart():
    from kalbert.bench.runner import retrieval_accuracy

    source = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    # target 0 is nearest to source 0 and 2; target 2 is nearest to nobody but source 1 finds target 1
    target = np.array([[1.0, 0.1], [0.0, 1.0], [0.3, -1.0]])
    forward, backward = retrieval_accuracy(source, target)
    assert forward == pytest.approx(200 / 3)  # sources 0, 1 right; source 2 picks target 0 or 1
    assert backward == pytest.approx(200 / 3)  # targets 0, 1 right; target 2's nearest source is 0


def test_xnli_retrieval_pairs_are_aligned_and_unique():
    need("parallel-xnli-test", "all")
    (task,) = select_tasks("xnli-ko-zh")
    data = load_task(task)
    n = len(data.gold)
    assert 5000 < n <= 6679 and len(set(data.sentences)) == 2 * n
    assert data.sentences[int(data.left[0])] != data.sentences[int(data.right[0])]


def test_tfidf_skips_cross_lingual_tasks():
    need("parallel-xnli-test", "all")
    results = run_bench(load_encoder("tfidf"), select_tasks("bitext"), command="test")
    assert results.results == []
