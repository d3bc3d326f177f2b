"""Where a data set's files are: the first data root that holds all of a split's files.

Roots, in order: an explicit ``root``, ``$KALBERT_DATA``, ``../shared/data`` beside the checkout (or the
working directory), then ``$XDG_CACHE_HOME/kalbert/data`` (default ``~/.cache/kalbert/data``). Without
network a missing data set is a one-line :class:`KalbertError` naming every place looked and the URL."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kalbert.data.registry import DATASETS, DatasetSpec, get_spec, split_of
from kalbert.errors import KalbertError
from kalbert.io import kalbert_cache

# ``../shared/data`` beside the checkout: the repository is <work>/main, the data <work>/shared/data.
_BESIDE_CHECKOUT = Path(__file__).resolve().parents[3] / "shared" / "data"


def data_roots(root: str | Path | None = None) -> list[Path]:
    """The data roots searched, in order, without duplicates (they need not exist)."""
    candidates = [Path(root)] if root is not None else []
    if os.environ.get("KALBERT_DATA"):
        candidates.append(Path(os.environ["KALBERT_DATA"]))
    candidates += [_BESIDE_CHECKOUT, Path("..", "shared", "data"), kalbert_cache() / "data"]
    roots: list[Path] = []
    for candidate in candidates:
        path = Path(os.path.abspath(candidate.expanduser()))
        if path not in roots:
            roots.append(path)
    return roots


def _find(spec: DatasetSpec, split: str, roots: list[Path]) -> Path | None:
    """The first root holding every file of the split."""
    return next((root for root in roots if all((root / rel).is_file() for rel in spec.splits[split])), None)


def data_path(name: str, split: str | None = None, root: str | Path | None = None) -> list[Path]:
    """The files of ``name``'s split (``None`` for a one-split set) from the first root that has them."""
    spec = get_spec(name)
    split = split_of(spec, split)
    roots = data_roots(root)
    found = _find(spec, split, roots)
    if found is None:
        raise KalbertError(
            f"data set '{name}' (split {split}) not found; looked in: {', '.join(map(str, roots))}",
            f"download it from {spec.url} into {roots[0]} as {', '.join(spec.splits[split])} "
            "or set KALBERT_DATA",
        )
    return [found / rel for rel in spec.splits[split]]


def describe_datasets(root: str | Path | None = None) -> list[dict[str, Any]]:
    """One plain dict per data set, with which splits are found where (for ``kalbert data list``)."""
    roots = data_roots(root)
    rows = []
    for spec in DATASETS.values():
        found = {split: _find(spec, split, roots) for split in spec.splits}
        located = [root for root in found.values() if root]
        rows.append({
            "name": spec.name, "kind": spec.kind, "lang": spec.lang, "splits": list(spec.splits),
            "eval_splits": [s for s in spec.splits if s in spec.eval_splits],
            "found": [s for s, root in found.items() if root],
            "missing": [s for s, root in found.items() if not root],
            "location": str(located[0]) if located else None,
            "url": spec.url, "licence": spec.licence, "description": spec.description,
        })
    return rows
