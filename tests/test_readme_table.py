"""README stays at most 250 lines, and every figure of its shipped-models table is in a record its row names
(a `kalbert bench` results file, a speed file, a vocabulary's kalbert.json); each shipped model's record names
its recipe, and every speed results file names the CPU it ran on."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

BENCH = {  # README label -> (task, split, metric) of a results row
    "KorSTS test": ("korsts", "test", "spearman"),
    "KLUE-STS dev": ("klue-sts", "dev", "spearman"),
    "stsb-zh test": ("stsb-zh", "test", "spearman"),
    "CNSD test": ("cnsd-stsb", "test", "spearman"),
    "STS-B test": ("stsb-ko-zh", "test", "spearman"),
    "XNLI retrieval": ("xnli-ko-zh", "all", "accuracy"),
    "LCQMC test": ("lcqmc", "test", "spearman"),
    "KorQuAD 1.0 test F1": ("korquad", "test", "f1"),
    "CMRC 2018 test F1": ("cmrc2018", "test", "f1"),
    "DRCD test F1": ("drcd", "test", "f1"),
    "KorQuAD retrieval MRR@10": ("korquad-retrieval", "test", "mrr_at_10"),
    "CMRC 2018 retrieval MRR@10": ("cmrc2018-retrieval", "test", "mrr_at_10"),
    "DRCD retrieval MRR@10": ("drcd-retrieval", "test", "mrr_at_10"),
}


def _table() -> list[dict[str, str]]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| folder | what |"))
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True)))
    return rows


def _records(row: dict[str, str]) -> list[Any]:
    links = re.findall(r"\]\(([^)]+\.json)\)", row["records"])
    if row["records"] == "its `kalbert.json`":
        links = [row["folder"].strip("`") + "/kalbert.json"]
    assert links, f"{row['folder']}: the row names no record"
    return [json.loads((ROOT / link).read_text(encoding="utf-8")) for link in links]


def _numbers(value: Any) -> list[float]:
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in _numbers(v)]
    return [float(value)] if isinstance(value, int | float) and not isinstance(value, bool) else []


def _figures(cell: str) -> list[tuple[str, float, int]]:
    """(label, value, decimals) of each figure: "KorSTS test 79.09", "ko<->zh: STS-B test 69.37", "UNK 0.131% (ko)"."""
    found = []
    for part in re.split(r"[;,/]", cell):
        part = re.sub(r"^\s*ko<->zh:\s*", "", part).strip()
        last = re.match(r"(.*?)\s*(\d+\.\d+)(?!.*\d\.\d)", part)  # the figure is the part's last decimal
        if last:
            found.append((last[1].strip(), float(last[2]), len(last[2].split(".")[1])))
    return found


def _matches(figure: float, decimals: int, value: float) -> bool:
    return any(round(scaled, decimals) == figure for scaled in (value, 100 * value))


@pytest.mark.parametrize("row", _table(), ids=lambda row: row["folder"].strip("`"))
def test_each_figure_is_in_the_records_the_row_names(row):
    records = _records(row)
    figures = _figures(row["measured"])
    assert figures, row["measured"]
    rows = [r for record in records for r in record.get("results", [])]
    for label, figure, decimals in figures:
        if label in BENCH:
            task, split, metric = BENCH[label]
            values = [r["value"] for r in rows if (r["task"], r["split"], r["metric"]) == (task, split, metric)]
            assert values, f"{row['folder']}: no {task}:{split} {metric} in its records"
        else:
            values = [n for record in records for n in _numbers(record)]
        assert any(_matches(figure, decimals, v) for v in values), f"{row['folder']}: {label} {figure} not recorded"


def test_the_shipped_models_name_their_recipe():
    for row in _table():
        folder = ROOT / row["folder"].strip("`")
        if not row["folder"].startswith("`models/"):
            continue
        recipe = json.loads((folder / "kalbert.json").read_text(encoding="utf-8"))["recipe"]["file"]
        assert (ROOT / recipe).is_file() and recipe in row["recipe"]


def test_every_speed_results_file_names_its_cpu():
    files = [p for p in (ROOT / "benchmarks/results").glob("*.json") if re.search(r"speed|throughput", p.name)]
    assert files
    for path in files:
        assert (json.loads(path.read_text(encoding="utf-8")).get("hardware") or {}).get("cpu"), path.name


def test_the_readme_stays_a_first_five_minutes():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250  # the rest lives in docs/
