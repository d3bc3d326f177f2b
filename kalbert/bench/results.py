"""The results file: one JSON per model run, carrying a format version so that old files fail loudly.

Layout (``kalbert-bench/1``)::

    {"format": "kalbert-bench/1", "model": "minilm", "model_kind": "baseline", "model_path": ...,
     "weights_sha256": {"model.safetensors": "9f2c..."},  (kalbert.weights.weights_sha256; null for baselines)
     "settings": {...},
     "command": "kalbert bench run ...", "kalbert_version": "0.1.0", "versions": {...},
     "hardware": {"cpu": "AMD EPYC", "instruction_sets": [...], ...},  (kalbert.hardware.hardware_block)
     "wall_seconds": 12.3, "note": "",
     "results": [{"task", "dataset", "split", "lang", "group", "label", "setting", "metric",
                  "value", "n", "wall_seconds", ...}]}

``value`` is x100 (or null when undefined, e.g. a collapsed model); ``setting`` says how the model
was used ("cosine" for embeddings, "fine-tuned" for `kalbert mc train`).
"""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from kalbert import __version__
from kalbert.errors import KalbertError
from kalbert.hardware import hardware_block
from kalbert.io import atomic_write_json
from kalbert.weights import weights_sha256

FORMAT = "kalbert-bench/1"
MODEL_KINDS = ("kalbert", "baseline")
_RECORD_KEYS = ("task", "dataset", "split", "group", "label", "setting", "metric", "value", "n")
_PACKAGES = ("torch", "transformers", "sentence-transformers", "scikit-learn", "numpy", "scipy")


@dataclass
class ResultsFile:
    """One model's benchmark run, as written to and read from disk."""

    model: str
    """display name (a baseline's name, or the model folder's name)"""
    model_kind: str
    """"kalbert" (a model the kit produced) or "baseline" """
    command: str
    """the command line that reproduces the file"""
    results: list[dict[str, Any]]
    """one record per (task, metric)"""
    model_path: str | None = None
    """the model folder as given on the command line (None for baselines)"""
    weights_sha256: dict[str, str] | None = None
    """sha256 of each weight file of the model scored (:func:`kalbert.weights.weights_sha256`), so the scores name
    their weights, not just a folder whose weights may change; :func:`write_results` fills it from ``model_path``"""
    settings: dict[str, Any] = field(default_factory=dict)
    """how the model was built or used (TF-IDF fitting corpora, encode batch size, training config)"""
    wall_seconds: float = 0.0
    """whole run, model loading included"""
    note: str = ""
    """a caveat the report prints beside the command (e.g. "random-init model, not pretrained")"""
    kalbert_version: str = __version__
    versions: dict[str, str] = field(default_factory=dict)
    """library versions the numbers were computed with"""
    hardware: dict[str, Any] | None = None
    """the machine the numbers (wall times) came from (:func:`kalbert.hardware.hardware_block`); None in
    files written before it was recorded"""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "model": self.model,
            "model_kind": self.model_kind,
            "model_path": self.model_path,
            "weights_sha256": self.weights_sha256,
            "settings": self.settings,
            "command": self.command,
            "kalbert_version": self.kalbert_version,
            "versions": self.versions,
            "hardware": self.hardware,
            "wall_seconds": round(self.wall_seconds, 2),
            "note": self.note,
            "results": self.results,
        }


def library_versions() -> dict[str, str]:
    """Versions of Python and the libraries that decide the numbers."""
    found = {"python": platform.python_version()}
    for package in _PACKAGES:
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            continue
    return found


def write_results(path: str | Path, results: ResultsFile) -> Path:
    """Write ``results``, naming the weights of ``model_path`` when the file does not name its weights yet."""
    path = Path(path)
    if path.is_dir():
        raise KalbertError(f"--out {path} is a folder", "give a file name such as results/mymodel.json")
    if results.weights_sha256 is None and results.model_path:
        results.weights_sha256 = weights_sha256(results.model_path)
    atomic_write_json(path, results.to_json())
    return path


def _foreign(data: Any) -> bool:
    """JSON another tool wrote beside the results (a speed benchmark): no bench format and no records."""
    if not isinstance(data, dict) or "results" in data:
        return False
    return not str(data.get("format", "")).startswith("kalbert-bench/")


def read_results(path: str | Path, skip_foreign: bool = False) -> ResultsFile | None:
    """Load and check a results file; anything not in the current format is a one-line error.

    With ``skip_foreign``, JSON that is plainly not a benchmark results file (no format, no records)
    gives None, so ``benchmarks/results/*.json`` can share its folder with other tools' output.
    """
    path = Path(path)
    regenerate = "rerun the `command` recorded in it with this kalbert to regenerate it"
    if not path.is_file():
        raise KalbertError(f"results file {path} not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise KalbertError(f"{path} is not a valid JSON results file: {exc}") from None
    if skip_foreign and _foreign(data):
        return None
    if not isinstance(data, dict) or "format" not in data:
        raise KalbertError(
            f"{path} has no format version (written by an older kalbert, or not a results file)", regenerate
        )
    if data["format"] != FORMAT:
        raise KalbertError(f"{path} is in format {data['format']!r}; this kalbert reads {FORMAT!r}", regenerate)
    try:
        records = data["results"]
        missing = sorted({key for record in records for key in _RECORD_KEYS if key not in record})
        if missing or data["model_kind"] not in MODEL_KINDS:
            raise ValueError(f"missing keys {missing}" if missing else f"model_kind {data['model_kind']!r}")
        return ResultsFile(
            model=data["model"],
            model_kind=data["model_kind"],
            command=data["command"],
            results=records,
            model_path=data.get("model_path"),
            weights_sha256=data.get("weights_sha256"),
            settings=data.get("settings", {}),
            wall_seconds=data.get("wall_seconds", 0.0),
            note=data.get("note", ""),
            kalbert_version=data["kalbert_version"],
            versions=data.get("versions", {}),
            hardware=data.get("hardware"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise KalbertError(f"{path} is a damaged {FORMAT} file ({exc})", regenerate) from None


def _start(config: dict[str, Any]) -> str:
    """The folder a fine-tuning run started from; for `kalbert mc average`, the averaged folders."""
    return config["model"] if "model" in config else " + ".join(config["models"])


def _finetuned_results(summary: dict[str, Any], model_name: str, command: str, note: str,
                       metrics: dict[str, float], extra: dict[str, Any]) -> ResultsFile:
    """A fine-tuning summary (`kalbert mc train`, `kalbert qa train`) as a results file, one record per metric."""
    from kalbert.bench.tasks import task_group, task_label
    from kalbert.data import get_spec

    task, report = summary["task"], summary["report"]
    common = {"task": task, "dataset": task, "split": report["split"], "lang": get_spec(task).lang,
              "group": task_group(task, "fine-tuned"), "label": task_label(task), "setting": "fine-tuned",
              "n": report["n"], "n_split": report["n_split"], "selected_on": summary["splits"]["select"],
              "trained_on": summary["splits"]["train"], **extra, "wall_seconds": summary["wall_seconds"]}
    return ResultsFile(
        model=model_name,
        model_kind="kalbert",
        command=command,
        results=[{**common, "metric": metric, "value": value} for metric, value in metrics.items()],
        model_path=_start(summary["config"]),
        weights_sha256=weights_sha256(summary["config"]["out"]),  # the fine-tuned weights, not model_path's
        settings=summary["config"],
        wall_seconds=summary["wall_seconds"],
        note=note,
        versions=library_versions(),
        hardware=summary.get("hardware") or hardware_block(),
    )


def mc_results(summary: dict[str, Any], model_name: str, command: str, note: str = "") -> ResultsFile:
    """A `kalbert mc train` summary as a results file, so `kalbert bench report` tables it beside sentence models."""
    return _finetuned_results(summary, model_name, command, note, {"accuracy": summary["report"]["accuracy"]}, {})


def qa_results(summary: dict[str, Any], model_name: str, command: str, note: str = "") -> ResultsFile:
    """A `kalbert qa train` summary as a results file (exact match and F1) for `kalbert bench report`."""
    report = summary["report"]
    return _finetuned_results(summary, model_name, command, note,
                              {"exact_match": report["exact_match"], "f1": report["f1"]},
                              {"train_questions": summary["train_questions"], "read_as": report["read_as"],
                               "train_sets": summary["train_sets"], "article_splits": summary["article_splits"]})
