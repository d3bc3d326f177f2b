"""What a model folder was trained on, read from its ``kalbert.json`` and its parents' records.

A fine-tuned teacher that saw KorSTS train is fine for scoring on KorSTS test; one that saw a split a
run is about to report is not, and neither is any student distilled from it. Stages record their
configs, so the training splits of a folder and of every folder it came from can be collected and
checked before hours of work.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kalbert.artifact import read_meta
from kalbert.errors import KalbertError

# config fields that name data a stage learned from, and the split a bare name means there
_TRAINING_FIELDS = {"train": "train", "parallel": "all", "sts": "train"}
# config fields that name another folder the stage learned from
_PARENT_FIELDS = ("model", "student", "teacher", "init", "source")


def _ref(entry: str, default_split: str) -> str:
    name, _, split = str(entry).partition(":")
    return f"{name}:{split or default_split}"


def training_splits(folder: str | Path, _seen: frozenset[Path] = frozenset()) -> set[str]:
    """``name:split`` of every data set that ``folder`` or a folder it came from was trained on."""
    folder = Path(folder).expanduser()
    if not folder.is_dir() or folder.resolve() in _seen:
        return set()
    seen = _seen | {folder.resolve()}
    meta = read_meta(folder)
    splits: set[str] = set()
    for stage in meta.get("stages", []):
        config = stage.get("config", {})
        for field, default_split in _TRAINING_FIELDS.items():
            entries = config.get(field) or []
            splits |= {_ref(entry, default_split) for entry in ([entries] if isinstance(entries, str) else entries)}
        for field in _PARENT_FIELDS:
            parent = config.get(field)
            if isinstance(parent, str) and parent and Path(parent).expanduser().resolve() != folder.resolve():
                splits |= training_splits(parent, seen)
    return splits


def refuse_trained_on(folder: str | Path, refs: Iterable[str], role: str) -> None:
    """A one-line error when ``folder`` (or a parent) was trained on a split that ``refs`` evaluate."""
    trained = training_splits(folder)
    overlap = sorted({_ref(ref, "test") for ref in refs} & trained)
    if overlap:
        raise KalbertError(f"{folder} was trained on {', '.join(overlap)}, which {role} evaluates",
                           "evaluate on a split it never saw, or use a model whose record does not name it")
