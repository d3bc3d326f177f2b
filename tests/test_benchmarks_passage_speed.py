"""benchmarks/passage_encode_speed.py without models: which passages it reads and how its ratios are reported."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest

from kalbert.errors import KalbertError

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def bench(monkeypatch) -> ModuleType:
    """The script as a module (it imports its sibling sentence_encode_speed, as it does when run)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    return importlib.import_module("passage_encode_speed")


def _row(role: str, model: str, length: int, per_second: float) -> dict:
    return {"role": role, "model": model, "folder": model, "parameters": 12_900_000, "max_seq_length": length,
            "prompt": "passage: ", "mean_tokens_read": float(length), "passages_at_limit": 256,
            "passages_per_second": per_second, "ms_per_passage": round(1000 / per_second, 2),
            "load_average_before": 1.9, "load_average_after": 2.0}


def test_interleave_alternates_and_cuts(bench):
    assert bench.interleave([["k1", "k2", "k3"], ["z1"]], 10) == ["k1", "z1", "k2", "k3"]
    assert bench.interleave([["k1", "k2"], ["z1", "z2"]], 3) == ["k1", "z1", "k2"]


def test_passages_alternate_korquad_and_cmrc(bench):
    try:
        groups, files = bench.qa_paragraphs()
    except KalbertError as exc:
        pytest.skip(f"shared data missing: {exc}")
    passages, languages = bench.pick_passages(groups, 6)
    assert len(set(passages)) == 6 and languages == {"ko": 3, "zh": 3}
    assert [bool(re.search("[가-힣]", text)) for text in passages] == [True, False] * 3
    assert [Path(f).name for f in files] == ["KorQuAD_v1.0_dev.json", "cmrc2018_dev.json"]


def test_ratios_and_table_on_fake_numbers(bench):
    rows = [_row("kalbert", "sbert-ko-zh-retrieval", 256, 29.8), _row("kalbert", "sbert-ko-zh-retrieval", 512, 12.0),
            _row("teacher", "multilingual-e5-small", 256, 7.2), _row("teacher", "multilingual-e5-small", 512, 3.0)]
    speedup, cost = bench.ratios(rows)
    assert [(r["max_seq_length"], r["kalbert_over_teacher"]) for r in speedup] == [(256, 4.14), (512, 4.0)]
    assert [(c["role"], c["from"], c["to"], c["ms_per_passage_ratio"]) for c in cost] == [
        ("kalbert", 256, 512, 2.48), ("teacher", 256, 512, 2.4)]
    result = {"command": "python benchmarks/passage_encode_speed.py", "passages": 256,
              "languages": {"ko": 128, "zh": 128}, "min_tokens": 0, "batch_size": 16, "rounds": 2, "torch_threads": 2,
              "hardware": None, "load_average_before": 1.9, "load_average_after": 2.0, "rows": rows,
              "kalbert_over_teacher": speedup, "length_cost": cost}
    text = bench.markdown(result)
    assert "| 256 | 29.8 | 7.2 | 4.14x |" in text
    assert "| multilingual-e5-small | 512 / 256: 2.40x |" in text
    assert "256/256" in text and "'passage: '" in text
