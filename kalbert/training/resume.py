"""The working folder that lets a fine-tuning run survive a crash or ``kill -9``.

While a stage trains, ``<out>.partial/`` beside its output folder holds ``run.json`` (the settings the
run started with) and ``state.pt`` (weights, optimiser, scheduler, step, RNG states, the best weights and
every evaluation so far), replaced atomically at each checkpoint. Rerunning the same command finds it and
continues from the last checkpoint; the numbers come out as an uninterrupted run's would, so a rerun with
other settings is refused. The stage removes the folder once its output is written.
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
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_bytes, atomic_write_json

log = logging.getLogger(__name__)

SUFFIX = ".partial"
RUN_FILE = "run.json"
STATE_FILE = "state.pt"


def _leaves(values: dict[str, Any]) -> dict[str, Any]:
    """Setting name -> value with nested configs (``loop``) flattened, as the flags name them."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        flat.update(_leaves(value) if isinstance(value, dict) else {key: value})
    return flat


def changed_settings(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """``name old -> new`` for every setting that differs (settings only one side has count as changed)."""
    old, new = _leaves(recorded), _leaves(now)
    return [f"{name} {old.get(name)!r} -> {new.get(name)!r}" for name in sorted(old.keys() | new.keys())
            if old.get(name) != new.get(name)]


class RunFolder:
    """``<out>.partial/``: the settings a run started with and its latest checkpoint."""

    def __init__(self, out: str | Path, settings: dict[str, Any]) -> None:
        out = Path(out)
        self.path = out.with_name(out.name + SUFFIX)
        self.settings: dict[str, Any] = json.loads(json.dumps(settings))  # as run.json will hold them
        self.state: dict[str, Any] | None = None
        """the checkpoint to resume from; None for a fresh run"""

    @classmethod
    def open(cls, out: str | Path, settings: dict[str, Any]) -> RunFolder:
        """The run folder for ``out``, with the state of an unfinished run of the same settings loaded.

        A stage opens it before loading models or data, so changed settings are refused at once.
        """
        run = cls(out, settings)
        run_file, state_file = run.path / RUN_FILE, run.path / STATE_FILE
        if not (run_file.is_file() and state_file.is_file()):
            return run
        recorded = json.loads(run_file.read_text(encoding="utf-8"))["settings"]
        changed = changed_settings(recorded, run.settings)
        if changed:
            raise KalbertError(f"{run.path} holds an unfinished run with other settings ({'; '.join(changed)})",
                               f"rerun with the settings it started with to resume it, or delete {run.path} "
                               "to start afresh")
        import torch

        # our own file, replaced atomically; it holds Python objects (evaluation history) besides tensors
        run.state = torch.load(state_file, map_location="cpu", weights_only=False)
        return run

    def save(self, state: dict[str, Any]) -> None:
        """Replace the checkpoint atomically (a kill leaves the old one or the new one, never a mix)."""
        import torch

        if not (self.path / STATE_FILE).is_file():  # a fresh run's first checkpoint
            atomic_write_json(self.path / RUN_FILE, {"kalbert_version": __version__, "command": invocation(),
                                                     "settings": self.settings})
        buffer = io.BytesIO()
        torch.save(state, buffer)
        atomic_write_bytes(self.path / STATE_FILE, buffer.getvalue())

    def remove(self) -> None:
        """Forget the run (its output is written, or it ended with nothing worth resuming)."""
        shutil.rmtree(self.path, ignore_errors=True)
