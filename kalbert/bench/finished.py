"""A benchmark run's finished tasks, kept beside its results file so that a killed run resumes where it stopped.

A reranked retrieval run takes over an hour on 2 cores. `kalbert bench run` writes ``OUT.partial`` after each task:
the run's key (its command, the weights it scores, the CPU and libraries) and each finished task's records. The
same command rerun on the same machine skips those tasks; any other run starts afresh, since records of other weights
or another CPU would mix into one file. The file goes once OUT is written.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kalbert.io import atomic_write_json

log = logging.getLogger(__name__)


def partial_path(out: str | Path) -> Path:
    """Where the run writing ``out`` keeps its finished tasks."""
    out = Path(out)
    return out.with_name(out.name + ".partial")


def run_key(command: str, weights: dict[str, str] | None, rerank_weights: dict[str, str] | None) -> dict[str, Any]:
    """What must not change between a run and its resumption: the command, the weights scored (the model's and
    the reranker's), the CPU and the libraries."""
    from kalbert.bench.results import library_versions
    from kalbert.hardware import detect

    return {"command": command, "weights": weights, "rerank_weights": rerank_weights,
            "hardware": asdict(detect()), "versions": library_versions()}


@dataclass
class FinishedTasks:
    """The records of a run's finished tasks, by task name, saved after each one."""

    path: Path
    key: dict[str, Any]
    records: dict[str, list[dict[str, Any]]]
    seconds: float = 0.0
    """wall seconds the earlier attempts spent, which the results file's wall time includes"""

    @classmethod
    def open(cls, out: str | Path, key: dict[str, Any]) -> FinishedTasks:
        """The finished tasks of an earlier attempt at this run (``key``); none when there was none or it was
        another run."""
        path = partial_path(out)
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return cls(path, key, {})
        if not isinstance(saved, dict) or saved.get("key") != key:
            log.info("%s is another run's (command, weights, CPU or libraries differ): starting afresh", path)
            return cls(path, key, {})
        records = saved.get("records", {})
        log.info("resuming: %d finished task(s) from %s (%s)", len(records), path, ", ".join(records))
        return cls(path, key, records, float(saved.get("seconds", 0.0)))

    def add(self, task: str, records: list[dict[str, Any]], seconds: float) -> None:
        """Keep ``task``'s records; ``seconds``: this attempt's wall time so far."""
        self.records[task] = records
        atomic_write_json(self.path, {"key": self.key, "seconds": round(self.seconds + seconds, 2),
                                      "records": self.records})

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
