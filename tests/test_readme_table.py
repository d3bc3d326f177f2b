"""README stays at most 250 lines, and every figure of its shipped-models table is attributed: a measured figure
to a named metric of a record its row names (a `kalbert bench` results file, a speed file, a vocabulary's
kalbert.json), a size figure to the folder's own files (parameters counted in its model.safetensors, MB from that
file's size, dims from the model's output), a recipe run's figure to the record its cell links; a figure it cannot
attribute fails. Each shipped model's records name its current weights (their sha256) and its recipe, and every
speed results file names the CPU it ran on."""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from kalbert.weights import weights_sha256

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
    "Korean Q->A retrieval MRR@10": ("answers-ko-retrieval", "test", "mrr_at_10"),
    "Chinese Q->A retrieval MRR@10": ("answers-zh-retrieval", "test", "mrr_at_10"),
    "CMRC 2018 retrieval MRR@10": ("cmrc2018-retrieval", "test", "mrr_at_10"),
    "DRCD retrieval MRR@10": ("drcd-retrieval", "test", "mrr_at_10"),
}
VOCAB_STATS = {  # README label -> held-out statistic in a vocabulary's kalbert.json (a rate, shown as %)
    "held-out UNK": "unk_rate",
    "UNK": "unk_rate",
    "morpheme-boundary crossing": "boundary_crossing",
    "boundary crossing": "boundary_crossing",
    "crossing": "boundary_crossing",
}
SETTINGS = {"hybrid + rerank@20": "cosine + BM25 (convex) + rerank@20"}
"""a measured cell's leading "SETTING:" -> the results setting all its bench figures must come from"""
SPEED = "ms per question on 2 cores"
"""a QA speed file's `kalbert qa predict` time for the row's folder"""
RERANK_SPEED = "ms p95 per query reranking 20 on 2 cores"
"""the rerank latency file's p95 at depth 20 for the row's folder, its fastest backend"""
WEIGHTS = "model.safetensors"
"""the file a shipped model's size figures describe (what transformers and sentence-transformers load)"""
DTYPES = {"float16": "F16", "float32": "F32"}
RECIPE_RUN = "recipe run on 2 cores"
"""the column that sets each model recipe's latest 2-core run beside the shipped folder, from the record it links"""


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


def _folder(row: dict[str, str]) -> Path:
    return ROOT / row["folder"].strip("`")


def _record_paths(row: dict[str, str]) -> list[Path]:
    links = re.findall(r"\]\(([^)]+\.json)\)", row["records"])
    if row["records"] == "its `kalbert.json`":
        links = [row["folder"].strip("`") + "/kalbert.json"]
    assert links, f"{row['folder']}: the row names no record"
    return [ROOT / link for link in links]


def _records(row: dict[str, str]) -> list[Any]:
    return [json.loads(path.read_text(encoding="utf-8")) for path in _record_paths(row)]


def _figures(cell: str) -> list[tuple[str, float, int, str]]:
    """(label, value, decimals, language) of each figure: "KorSTS test 79.09", "ko<->zh: STS-B test 69.37",
    "50.0 ms per question on 2 cores" (the label follows), "UNK 0.131% (ko) / 0.031% (zh)" (the second figure
    takes the label before it)."""
    found, label = [], ""
    for part in re.split(r"[;,/]", cell):
        part = re.sub(r"^\s*ko<->zh:\s*", "", part).strip()
        last = re.match(r"(.*?)\s*(\d+\.\d+)%?(?!.*\d\.\d)\s*(.*)$", part)  # the figure is the part's last decimal
        if not last:
            continue
        language = re.fullmatch(r"\((ko|zh)\)", last[3])
        label = last[1].strip() or (label if language else last[3])
        found.append((label, float(last[2]), len(last[2].split(".")[1]), language[1] if language else ""))
    return found


def _setting(cell: str) -> tuple[str | None, str]:
    """(the results setting a measured cell's "SETTING:" names, or None; the cell without it)."""
    for written, setting in SETTINGS.items():
        if cell.startswith(f"{written}:"):
            return setting, cell[len(written) + 1:]
    return None, cell


def _recorded(row: dict[str, str], label: str, language: str) -> list[float]:
    """The values the row's records hold for ``label``; a label no named metric stands for fails."""
    records = _records(row)
    setting = _setting(row["measured"])[0]
    if label in BENCH:
        task, split, metric = BENCH[label]
        return [r["value"] for record in records for r in record.get("results", [])
                if (r["task"], r["split"], r["metric"]) == (task, split, metric)
                and setting in (None, r["setting"])]
    if label == RERANK_SPEED:
        return [r["p95_ms"] for record in records for r in record.get("rows", [])
                if r.get("model") == row["folder"].strip("`") and r["depth"] == 20 and record["threads"] == 2]
    if label == SPEED:
        return [r["ms_per_question"]["kalbert qa predict"] for record in records for r in record.get("rows", [])
                if r["model"] == row["folder"].strip("`") and record["threads"] == 2]
    if label in VOCAB_STATS:
        stats = [s for record in records for lang, s in (record.get("heldout_stats") or {}).items()
                 if lang == language or not language and len(record["heldout_stats"]) == 1]
        return [100 * s[VOCAB_STATS[label]] for s in stats]
    raise AssertionError(f"{row['folder']}: README's {label!r} is no metric the test knows (BENCH, VOCAB_STATS)")


@pytest.mark.parametrize("row", _table(), ids=lambda row: row["folder"].strip("`"))
def test_each_figure_is_the_named_metric_of_the_records_the_row_names(row):
    figures = _figures(_setting(row["measured"])[1])
    assert figures, row["measured"]
    for label, figure, decimals, language in figures:
        values = _recorded(row, label, language)
        assert values, f"{row['folder']}: no {label} {language} in its records"
        assert any(round(v, decimals) == figure for v in values), f"{row['folder']}: {label} {figure} not recorded"


def _tensors(weights: Path) -> dict[str, dict[str, Any]]:
    """The safetensors header: each tensor's dtype and shape, read without loading the weights."""
    with open(weights, "rb") as handle:
        size = struct.unpack("<Q", handle.read(8))[0]
        header = json.loads(handle.read(size))
    return {name: spec for name, spec in header.items() if name != "__metadata__"}


def _dimension(folder: Path, tensors: dict[str, dict[str, Any]]) -> int:
    """The embedding size the model outputs: its Pooling module's, or a static model's vector length."""
    for module in json.loads((folder / "modules.json").read_text(encoding="utf-8")):
        pooling = folder / module["path"] / "config.json"
        if module["type"].endswith(".Pooling"):
            config = json.loads(pooling.read_text(encoding="utf-8"))
            return config.get("embedding_dimension") or config["word_embedding_dimension"]
    return tensors["embedding.weight"]["shape"][-1]


def _size_figures(row: dict[str, str]) -> list[tuple[str, str, str]]:
    """(part, written, counted) for each part of the size cell; a part the test cannot count fails."""
    folder = _folder(row)
    checked = []
    for part in (p.strip() for p in row["size"].split(", ")):
        if pieces := re.fullmatch(r"([\d,]+) pieces", part):
            import sentencepiece as spm

            counted = spm.SentencePieceProcessor(model_file=str(folder / "spiece.model")).get_piece_size()
            checked.append((part, pieces[1], f"{counted:,}"))
            continue
        tensors = _tensors(folder / WEIGHTS)
        if count := re.fullmatch(r"(\d+\.\d)M (params|values)", part):
            counted = sum(math.prod(t["shape"]) for t in tensors.values())
            checked.append((part, count[1], f"{counted / 1e6:.1f}"))
        elif dims := re.fullmatch(r"(\d+) dims", part):
            checked.append((part, dims[1], str(_dimension(folder, tensors))))
        elif mb := re.fullmatch(r"(\d+(?:\.\d+)?) MB (float16|float32)", part):
            decimals = len(mb[1].partition(".")[2])
            dtypes = {t["dtype"] for t in tensors.values()}
            checked.append((part, f"{mb[1]} {DTYPES[mb[2]]}",
                            f"{(folder / WEIGHTS).stat().st_size / 1e6:.{decimals}f} {'/'.join(sorted(dtypes))}"))
        else:
            raise AssertionError(f"{row['folder']}: size {part!r} is nothing the test can count")
    return checked


@pytest.mark.parametrize("row", _table(), ids=lambda row: row["folder"].strip("`"))
def test_each_size_figure_is_counted_from_the_folder(row):
    for part, written, counted in _size_figures(row):
        assert written == counted, f"{row['folder']}: {part!r}, but its files give {counted}"


@pytest.mark.parametrize("row", [row for row in _table() if row["folder"].startswith("`models/")],
                         ids=lambda row: row["folder"].strip("`"))
def test_a_shipped_models_records_name_its_current_weights(row):
    current = weights_sha256(_folder(row))
    assert current and WEIGHTS in current
    reranker = json.loads((_folder(row) / "kalbert.json").read_text(encoding="utf-8"))["kind"] == "reranker"
    for path, record in zip(_record_paths(row), _records(row), strict=True):
        if "results" not in record:
            named = [r.get("weights_sha256") for r in record["rows"] if r["model"] == row["folder"].strip("`")]
        elif reranker:  # a first stage's file: its reranked records name the reranker's weights
            named = [r["rerank"].get("weights_sha256") for r in record["results"] if "rerank" in r]
        else:
            named = [record.get("weights_sha256")]
        assert named and all(n == current for n in named), f"{path.name} does not name the weights of {row['folder']}"


def _numbers(record: Any) -> list[float]:
    """Every number a run record holds: its values, and the figures its text states ("about 7.0 hours")."""
    if isinstance(record, dict):
        return [n for key, value in record.items() for n in _numbers(key) + _numbers(value)]
    if isinstance(record, list):
        return [n for value in record for n in _numbers(value)]
    if isinstance(record, str):
        return [float(figure) for figure in re.findall(r"\d+\.\d+", record)]
    return [float(record)] if isinstance(record, (int, float)) and not isinstance(record, bool) else []


@pytest.mark.parametrize("row", [row for row in _table() if row["folder"].startswith("`models/")],
                         ids=lambda row: row["folder"].strip("`"))
def test_each_recipe_run_figure_is_in_the_record_its_cell_links(row):
    cell = row[RECIPE_RUN]
    links = re.findall(r"\]\((benchmarks/results/[^)]+\.json)\)", cell)
    assert links, f"{row['folder']}: its {RECIPE_RUN!r} cell links no results file"
    numbers = [n for link in links for n in _numbers(json.loads((ROOT / link).read_text(encoding="utf-8")))]
    for figure in re.findall(r"\d+\.\d+", re.sub(r"\]\([^)]*\)", "]", cell)):
        decimals = len(figure.split(".")[1])
        assert any(round(n, decimals) == float(figure) for n in numbers), (
            f"{row['folder']}: {RECIPE_RUN} {figure} is in no record its cell links")


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
