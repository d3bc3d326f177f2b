"""What a model folder was trained on, read from its ``kalbert.json`` and its parents' records.

A fine-tuned teacher that saw KorSTS train is fine for scoring on KorSTS test; one that saw a split a
run is about to report is not, and neither is any student distilled from it. Stages record their
configs, so the training splits of a folder and of every folder it came from can be collected and
checked before hours of work.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from kalbert.artifact import read_meta
from kalbert.errors import KalbertError

# config fields that name data a stage learned from, and the split a bare name means there
_TRAINING_FIELDS = {"train": "train", "parallel": "all", "sts": "train"}
# config fields that name another folder the stage learned from
_PARENT_FIELDS = ("model", "models", "student", "teacher", "init", "source")


def record_beside(data_file: str | Path) -> Path:
    """The record beside a data file a command wrote (`kalbert sbert mine`, `kalbert mc cloze`): same stem,
    ``.json``."""
    return Path(data_file).expanduser().with_suffix(".json")


def _labelled_splits(pairs_file: Path) -> set[str]:
    """What the teacher that labelled a mined pairs file was trained on (its record says; none without one)."""
    if not pairs_file.is_file():
        return set()
    try:
        record = json.loads(record_beside(pairs_file).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return set()
    return set(record.get("training_splits", [])) if isinstance(record, dict) else set()


def _ref(entry: str, default_split: str) -> str:
    name, _, split = str(entry).partition(":")
    return f"{name}:{split or default_split}"


def _names(value: object) -> list[str]:
    """A config field that names one thing or several, as a list of the names (empty for anything else)."""
    values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [v for v in values if isinstance(v, str) and v]


def training_splits(folder: str | Path) -> set[str]:
    """``name:split`` of every data set that ``folder`` or a folder it came from was trained on; for a mined
    pairs file, what its labelling teacher was trained on. Each record is read once: averaged models name
    the same ancestors along many paths, and walking every path grows exponentially with the stages."""
    splits: set[str] = set()
    visited: set[Path] = set()
    pending = [Path(folder).expanduser()]
    while pending:
        current = pending.pop()
        if current.is_file():
            splits |= _labelled_splits(current)
            continue
        if not current.is_dir() or (key := current.resolve()) in visited:
            continue
        visited.add(key)
        for stage in read_meta(current).get("stages", []):
            config = stage.get("config", {})
            for field, default_split in _TRAINING_FIELDS.items():
                for entry in _names(config.get(field)):
                    splits |= {_ref(entry, default_split)} | _labelled_splits(Path(entry).expanduser())
            pending += [Path(parent).expanduser() for field in _PARENT_FIELDS for parent in _names(config.get(field))]
    return splits


def refuse_trained_on(folder: str | Path, refs: Iterable[str], role: str) -> None:
    """A one-line error when ``folder`` (or a parent) was trained on a split that ``refs`` evaluate."""
    trained = training_splits(folder)
    overlap = sorted({_ref(ref, "test") for ref in refs} & trained)
    if overlap:
        what = "was labelled by a teacher trained on" if Path(folder).expanduser().is_file() else "was trained on"
        raise KalbertError(f"{folder} {what} {', '.join(overlap)}, which {role} evaluates",
                           "evaluate on a split it never saw, or use a model whose record does not name it")
