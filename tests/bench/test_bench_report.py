"""`kalbert bench report`: byte-stable Markdown and PNGs, anchors in their own block, format checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kalbert.bench import ResultsFile, read_results, write_report, write_results
from kalbert.cli.main import main
from kalbert.errors import KalbertError

REPO = Path(__file__).resolve().parents[2]


def _record(task, split, group, label, metric, value, n, setting="cosine"):
    return {
        "task": task,
        "dataset": task,
        "split": split,
        "group": group,
        "label": label,
        "setting": setting,
        "metric": metric,
        "value": value,
        "n": n,
        "wall_seconds": 1.23,
    }


def _files(folder: Path) -> list[Path]:
    tfidf = ResultsFile(
        "tfidf",
        "baseline",
        "kalbert bench run --model tfidf",
        [
            _record("korsts", "test", "Korean STS", "KorSTS", "spearman", 65.9123, 1379),
            _record("korsts", "test", "Korean STS", "KorSTS", "pearson", 66.0, 1379),
            _record("afqmc", "dev", "Chinese pair classification", "AFQMC", "accuracy", 69.0, 4316),
        ],
        wall_seconds=3.2,
    )
    mine = ResultsFile(
        "ko-sbert|tiny",
        "kalbert",
        "kalbert bench run --model m",
        [
            _record("korsts", "test", "Korean STS", "KorSTS", "spearman", None, 1379),
            _record("c3", "test", "Multiple choice (fine-tuned)", "C3", "accuracy", 30.5, 100, setting="fine-tuned"),
        ],
        wall_seconds=99.0,
        note="random init",
    )
    return [write_results(folder / "tfidf.json", tfidf), write_results(folder / "mine.json", mine)]


def test_report_is_byte_stable_and_complete(tmp_path):
    paths = _files(tmp_path)
    first = write_report(paths, tmp_path / "a" / "RESULTS.md")
    second = write_report(list(reversed(paths)), tmp_path / "b" / "RESULTS.md")
    assert [p.name for p in first] == [p.name for p in second]
    assert [p.name for p in first] == [
        "RESULTS.md",
        "RESULTS-korean-sts.png",
        "RESULTS-chinese-pair-classification.png",
        "RESULTS-multiple-choice-fine-tuned.png",
    ]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    md = first[0].read_text(encoding="utf-8")
    assert "| ko-sbert\\|tiny | kalbert | cosine | n/a |" in md  # kalbert rows first; pipes escaped
    assert "| tfidf | baseline | cosine | 65.91 | 66.00 |" in md
    assert "Splits: KorSTS: test, n=1379." in md
    assert "## Published anchors" in md and "| KorSTS | test | KoSimCSE-RoBERTa-multitask | Spearman | 86.12 |" in md
    assert "random init" in md and "3.2" not in md and "99.0" not in md  # no wall times
    assert first[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_results_from_an_older_format_are_refused(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"model": "x", "results": [{"task": "korsts", "spearman": 0.8}]}), encoding="utf-8")
    with pytest.raises(KalbertError, match="no format version"):
        read_results(old)
    old.write_text(json.dumps({"format": "kalbert-bench/0", "results": []}), encoding="utf-8")
    with pytest.raises(KalbertError, match="kalbert-bench/0"):
        read_results(old)
    old.write_text(
        json.dumps(
            {
                "format": "kalbert-bench/1",
                "model": "x",
                "model_kind": "baseline",
                "command": "c",
                "kalbert_version": "0",
                "results": [{"task": "korsts"}],
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(KalbertError, match="damaged"):
        read_results(old)


def test_cli_report_error_is_one_line(tmp_path, capsys):
    (tmp_path / "old.json").write_text("[]", encoding="utf-8")
    assert main(["bench", "report", str(tmp_path / "old.json"), "--out", str(tmp_path / "R.md")]) == 2
    assert "no format version" in capsys.readouterr().err
    assert not (tmp_path / "R.md").exists()


def test_duplicate_results_are_refused(tmp_path):
    paths = _files(tmp_path)
    copy = tmp_path / "copy.json"
    copy.write_bytes(paths[0].read_bytes())
    with pytest.raises(KalbertError, match="is in both"):
        write_report([*paths, copy], tmp_path / "R.md")


def test_committed_report_regenerates_byte_for_byte(tmp_path):
    committed = sorted((REPO / "benchmarks" / "results").glob("*.json"))
    if not committed or not (REPO / "benchmarks" / "RESULTS.md").is_file():
        pytest.skip("no committed benchmark results")
    for path in write_report(committed, tmp_path / "RESULTS.md"):
        assert path.read_bytes() == (REPO / "benchmarks" / path.name).read_bytes(), f"{path.name} is stale"


def test_other_tools_json_beside_the_results_is_skipped(tmp_path, caplog):
    paths = _files(tmp_path)
    other = tmp_path / "vocab_comparison.json"
    other.write_text(json.dumps({"command": "python benchmarks/x.py", "pieces": 1.0}), encoding="utf-8")
    with caplog.at_level("WARNING"):
        written = write_report([*paths, other], tmp_path / "with" / "RESULTS.md")
    assert "vocab_comparison.json" in caplog.text
    alone = write_report(paths, tmp_path / "without" / "RESULTS.md")
    assert written[0].read_bytes() == alone[0].read_bytes()
    with pytest.raises(KalbertError, match="none of the given files"):
        write_report([other], tmp_path / "R.md")


def test_each_speed_figure_names_the_cpu_it_came_from(tmp_path, fake_cpu):
    """Bench results and speed benchmarks' JSON: the recorded CPU in one short label, or "CPU not recorded"."""
    from kalbert.hardware import hardware_block

    paths = _files(tmp_path)
    fake_cpu({"avx2", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16"}, model="AMD EPYC 9654 96-Core Processor")
    block = hardware_block()
    recorded = json.loads(paths[0].read_text(encoding="utf-8"))
    paths[0].write_text(json.dumps({**recorded, "hardware": block}), encoding="utf-8")
    speed = tmp_path / "sentence_encode_speed.json"
    speed.write_text(json.dumps({"command": "python benchmarks/sentence_encode_speed.py", "rows": [],
                                 "hardware": block}), encoding="utf-8")
    old_speed = tmp_path / "pretrain_throughput.json"
    old_speed.write_text(json.dumps({"command": "python benchmarks/pretrain_throughput.py", "tokens_per_s": 1.0}),
                         encoding="utf-8")
    text = write_report([*paths, speed, old_speed], tmp_path / "R.md")[0].read_text(encoding="utf-8")
    commands = text[text.index("## Commands"):text.index("## Speed figures")]
    assert commands.count("| AMD EPYC 9654, AVX-512 VNNI/BF16 |") == 1
    assert commands.count("| CPU not recorded |") == len(paths) - 1
    section = text[text.index("## Speed figures"):]
    assert "| `sentence_encode_speed.json` | `python benchmarks/sentence_encode_speed.py` | AMD EPYC 9654, " \
           "AVX-512 VNNI/BF16 |" in section
    assert "| `pretrain_throughput.json` | `python benchmarks/pretrain_throughput.py` | CPU not recorded |" in section
    assert read_results(paths[0]).hardware == block
