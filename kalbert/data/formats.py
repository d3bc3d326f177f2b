"""Strict readers of the file formats data sets come in (TSV, CSV, JSON, JSONL), each file's quirks
(BOMs, CRLF, quoted csv) handled once; a malformed row is skipped with one warning per file."""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from kalbert.errors import KalbertError
from kalbert.io import open_text

log = logging.getLogger(__name__)
T = TypeVar("T")


Rows = Iterator[tuple[str, Any]]  # (where, row); row None marks a malformed line


def clean_cell(cell: str) -> str:
    return cell.replace("\ufeff", "").strip()


def tsv_rows(path: Path, header: bool) -> Rows:
    """Tab-separated cells (no quoting); with ``header``, dicts keyed by the first line's names."""
    names: list[str] | None = None
    for no, line in enumerate(open_text(path), start=1):
        if not line.strip():
            continue
        cells = [clean_cell(cell) for cell in line.split("\t")]
        if header and names is None:
            names = cells
        elif names is None:
            yield f"line {no}", cells
        else:
            yield f"line {no}", dict(zip(names, cells, strict=True)) if len(cells) == len(names) else None


def csv_rows(path: Path) -> Rows:
    reader = csv.reader(open_text(path))
    try:
        for cells in reader:
            if cells:
                yield f"line {reader.line_num}", [clean_cell(cell) for cell in cells]
    except csv.Error as exc:
        raise KalbertError(f"{path} line {reader.line_num} is not valid csv: {exc}") from None


def jsonl_rows(path: Path) -> Rows:
    for no, line in enumerate(open_text(path), start=1):
        line = clean_cell(line)
        if line:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                row = None
            yield f"line {no}", row


def json_value(path: Path) -> Any:
    try:
        return json.loads(clean_cell("\n".join(open_text(path))))
    except json.JSONDecodeError as exc:
        raise KalbertError(f"{path} line {exc.lineno} is not valid JSON: {exc.msg}",
                           "re-download the file from the data set's URL") from None


def json_list_rows(path: Path) -> Rows:
    data = json_value(path)
    if not isinstance(data, list):
        raise KalbertError(f"{path} is not a JSON list", "re-download the file from the data set's URL")
    return ((f"item {i}", item) for i, item in enumerate(data))


def read_records(path: Path, rows: Rows, make: Callable[[Any], T | None]) -> list[T]:
    """``make`` each row; malformed rows (None, or ``make`` failing) are skipped, counted and logged."""
    out: list[T] = []
    bad, first_bad = 0, ""
    for where, row in rows:
        try:
            if row is None:
                raise ValueError(where)
            record = make(row)
        except (LookupError, TypeError, ValueError, AttributeError):
            bad, first_bad = bad + 1, first_bad or where
            continue
        if record is not None:  # None: a row deliberately left out (e.g. NLI label "-")
            out.append(record)
    if not out:
        problem = f"no readable rows ({bad} malformed, first at {first_bad})" if bad else "is empty"
        raise KalbertError(f"{path} {problem}", "re-download the file from the data set's URL")
    if bad:
        log.warning("%s: skipped %d malformed rows (first at %s)", path, bad, first_bad)
    return out


def text_value(value: Any) -> str:
    """A non-empty stripped string; anything else marks the row malformed."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("empty text")
    return value.strip()


def score_value(value: Any) -> float:
    score = float(value)
    if not 0.0 <= score <= 5.0:
        raise ValueError(f"score {score} outside 0..5")
    return score


def index_value(value: Any, n: int, base: int = 0) -> int:
    index = int(value) - base
    if isinstance(value, bool) or not 0 <= index < n:
        raise ValueError(f"label {value!r} out of range")
    return index
