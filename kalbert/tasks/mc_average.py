"""Weight averaging ("model soup") of multiple-choice models fine-tuned from one starting point.

Runs of one task from the same start and seed (so the same initial head) can end near enough to one another
that their parameter-wise mean beats each of them, at no cost at inference; runs that drift apart average into
a worse model (C3 at three learning rates did: docs/qa-and-mc.md). So the average is measured on the task's
selection split (dev) as well as its report split, and dev chooses between it and its sources as it chooses
between runs.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kalbert import __version__
from kalbert.artifact import Kind, folder_languages, read_meta
from kalbert.config import recorded_values
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_text, refuse_existing_output
from kalbert.precision import autocast, resolve_precision
from kalbert.stage import artifact_folder, write_record
from kalbert.tasks.configs import MC_TASKS, MCAverageConfig
from kalbert.tasks.multiple_choice import load_mc_model, mc_accuracy, task_examples
from kalbert.training.device import default_device
from kalbert.verbs import command_for
from kalbert.weights import average_weight_files, normalised_weights

# what the averaged runs must share: one task, one start, one input length
_SHARED = ("task", "model", "max_seq_length")


def _run_records(folders: list[Path]) -> list[dict[str, Any]]:
    """Each source's record; refused unless all are multiple-choice runs whose configs share ``_SHARED``."""
    records = [read_meta(folder, expect=Kind.MC_MODEL) for folder in folders]
    for folder, record in zip(folders, records, strict=True):
        if "models" in (record.get("config") or {}):
            raise KalbertError(f"{folder} is itself an average", "average the runs it was made from")
    for key in _SHARED:
        values = {str((record.get("config") or {}).get(key)) for record in records}
        if len(values) > 1:
            raise KalbertError(f"the models differ in {key} ({', '.join(sorted(values))})",
                               "average runs of one task from one starting model at one --max-seq-length")
    return records


def _best_select_accuracy(record: dict[str, Any]) -> float | None:
    scores = [entry["select_accuracy"] for entry in record.get("history") or [] if "select_accuracy" in entry]
    return max(scores) if scores else None


def _source(folder: Path, record: dict[str, Any]) -> dict[str, Any]:
    """A source run as the average's record lists it (its settings recorded flat or nested under ``loop``)."""
    settings = recorded_values(record["config"])
    return {"path": str(folder), "lr": settings.get("lr"), "seed": settings.get("seed"),
            "select_accuracy": _best_select_accuracy(record)}


def average_mc(config: MCAverageConfig, overwrite: bool = False) -> dict[str, Any]:
    """Write the weighted mean of ``config.models`` to ``config.out``, measure it on the task's selection and
    report splits, and return the summary also written to ``out/kalbert.json``."""
    started = time.perf_counter()
    weights = normalised_weights(config.models, config.weights)
    folders = [Path(m).expanduser() for m in config.models]
    records = _run_records(folders)
    refuse_existing_output(config.out, overwrite)
    task, max_seq_length = records[0]["config"]["task"], records[0]["config"]["max_seq_length"]
    splits = MC_TASKS[task]
    select = task_examples(task, splits.select, config.max_eval_rows) if splits.select else []
    report_all = task_examples(task, splits.report, None)
    report = report_all[: config.max_eval_rows] if config.max_eval_rows else report_all
    device = default_device()
    bf16, precision_reason = resolve_precision(config.precision, device)
    with artifact_folder(config.out, Kind.MC_MODEL, overwrite=overwrite) as tmp:
        shutil.copytree(folders[0], tmp, dirs_exist_ok=True)
        average_weight_files(folders, weights, tmp)
        tokenizer, model = load_mc_model(tmp)
        model.to(device)
        with autocast(device, bf16):
            select_accuracy = (mc_accuracy(model, tokenizer, select, config.batch_size, max_seq_length, "select")
                               if select else None)
            accuracy = mc_accuracy(model, tokenizer, report, config.batch_size, max_seq_length, "report")
        summary = {
            "stage": "mc-average",
            "kind": Kind.MC_MODEL,
            "kalbert_version": __version__,
            "task": task,
            "architecture": type(model).__name__,
            "model_type": model.config.model_type,
            "config": {**asdict(config), "weights": weights},
            "splits": asdict(splits),
            "sources": [_source(folder, record) for folder, record in zip(folders, records, strict=True)],
            "select": {"split": splits.select,
                       "accuracy": round(select_accuracy, 4) if select_accuracy is not None else None,
                       "n": len(select)},
            "report": {"split": splits.report, "accuracy": round(accuracy, 4), "n": len(report),
                       "n_split": len(report_all), "subset": len(report) < len(report_all)},
            "max_seq_length": max_seq_length,
            "precision": "bf16" if bf16 else "fp32",
            "precision_reason": precision_reason,
            "wall_seconds": round(time.perf_counter() - started, 2),
        }
        summary = write_record(tmp, summary, Kind.MC_MODEL, folders, folder_languages(folders[0]),
                               command_for(config))
        atomic_write_text(tmp / "README.md", render_average_card(summary))
    return summary


def render_average_card(summary: dict[str, Any]) -> str:
    """The README card of an averaged multiple-choice folder, from its kalbert.json alone."""
    report, select = summary["report"], summary["select"]
    subset = f" (first {report['n']} of {report['n_split']} examples)" if report["subset"] else ""
    languages = "".join(f"- {lang}\n" for lang in summary["languages"])
    sources = "".join(f"- `{s['path']}` (lr {s['lr']}, seed {s['seed']}; best {select['split']} accuracy "
                      f"{s['select_accuracy']}) weight {w:.3f}\n"
                      for s, w in zip(summary["sources"], summary["config"]["weights"], strict=True))
    measured = f"; {select['accuracy']:.4f} on {select['split']}" if select["accuracy"] is not None else ""
    return f"""---
language:
{languages}library_name: transformers
tags: [{summary['model_type']}, multiple-choice, kalbert, model-soup]
---

# Multiple choice: the weight average of {len(summary['sources'])} {summary['task']} runs

Accuracy {report['accuracy']:.4f} on {summary['task']}:{report['split']}{subset}{measured}. `{summary['architecture']}`,
the parameter-wise mean of:

{sources}
made with kalbert {summary['kalbert_version']}:

```
{summary['command']}
```

Everything else (config, machine) is in `kalbert.json`.
"""
