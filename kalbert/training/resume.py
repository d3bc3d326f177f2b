"""The working folder that lets a fine-tuning run survive a crash or ``kill -9``.

While a stage trains, ``<out>.partial/`` beside its output folder holds ``run.json`` (the settings the
run started with) and ``state.pt`` (weights, optimiser, scheduler, step, RNG states, the best weights and
every evaluation so far), replaced atomically at each checkpoint. Rerunning the same command finds it and
continues from the last checkpoint; the numbers come out as an uninterrupted run's would, so a rerun with
other settings is refused. The stage removes the folder once its output is written. A stage that trains in
phases (`kalbert static train`: corpus, then pairs) keeps one ``state-PHASE.pt`` per phase, so a finished
phase is not trained again.
"""

from __future__ import annotations

import io
import json
import logging
import shutil
from pathlib import Path
from typing import Any

from kalbert import __version__
from kalbert.artifact import invocation
from kalbert.config import recorded_values
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_bytes, atomic_write_json

log = logging.getLogger(__name__)

SUFFIX = ".partial"
RUN_FILE = "run.json"
STATE_FILE = "state.pt"


def changed_settings(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """``name old -> new`` for every setting that differs (settings only one side has count as changed)."""
    old, new = recorded_values(recorded), recorded_values(now)
    return [f"{name} {old.get(name)!r} -> {new.get(name)!r}" for name in sorted(old.keys() | new.keys())
            if old.get(name) != new.get(name)]


class RunFolder:
    """``<out>.partial/``: the settings a run started with and its latest checkpoint."""

    def __init__(self, out: str | Path, settings: dict[str, Any], phase: str = "") -> None:
        out = Path(out)
        self.path = out.with_name(out.name + SUFFIX)
        self.settings: dict[str, Any] = json.loads(json.dumps(settings))  # as run.json will hold them
        self.state_file = self.path / (f"state-{phase}.pt" if phase else STATE_FILE)
        """this run's (or phase's) checkpoint"""
        self.state: dict[str, Any] | None = None
        """the checkpoint to resume from; None for a fresh run"""

    @classmethod
    def open(cls, out: str | Path, settings: dict[str, Any], phase: str = "") -> RunFolder:
        """The run folder for ``out`` (its ``phase``'s checkpoint, when the stage trains in phases), with the
        state of an unfinished run of the same settings loaded.

        A stage opens it before loading models or data, so changed settings are refused at once.
        """
        run = cls(out, settings, phase)
        run_file = run.path / RUN_FILE
        if not (run_file.is_file() and run._checkpoints()):
            return run
        recorded = json.loads(run_file.read_text(encoding="utf-8"))["settings"]
        changed = changed_settings(recorded, run.settings)
        if changed:
            raise KalbertError(f"{run.path} holds an unfinished run with other settings ({'; '.join(changed)})",
                               f"rerun with the settings it started with to resume it, or delete {run.path} "
                               "to start afresh")
        import torch

        if run.state_file.is_file():  # our own file, replaced atomically; it holds Python objects besides tensors
            run.state = torch.load(run.state_file, map_location="cpu", weights_only=False)
        return run

    def _checkpoints(self) -> list[Path]:
        return sorted(self.path.glob("state*.pt"))

    def save(self, state: dict[str, Any]) -> None:
        """Replace the checkpoint atomically (a kill leaves the old one or the new one, never a mix)."""
        import torch

        if not self._checkpoints():  # a fresh run's first checkpoint
            atomic_write_json(self.path / RUN_FILE, {"kalbert_version": __version__, "command": invocation(),
                                                     "settings": self.settings})
        buffer = io.BytesIO()
        torch.save(state, buffer)
        atomic_write_bytes(self.state_file, buffer.getvalue())

    def remove(self) -> None:
        """Forget the run or phase (its output is written, or it ended with nothing worth resuming); the folder
        goes with the last checkpoint."""
        self.state_file.unlink(missing_ok=True)
        if not self._checkpoints():
            shutil.rmtree(self.path, ignore_errors=True)
