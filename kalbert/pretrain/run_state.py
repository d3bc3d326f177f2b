"""What makes a run resumable exactly: the run folder and its recorded config, RNG states, clean stops.

A resumed run must compute the numbers the uninterrupted one would have, so it refuses a config that
differs in anything but the fields of ``FREE_ON_RESUME``, and it restores every RNG the step uses.
"""

from __future__ import annotations

import json
import logging
import shutil
import signal
import threading
from pathlib import Path

from kalbert import __version__
from kalbert.artifact import META_FILE, Kind, folder_languages, invocation
from kalbert.errors import KalbertError
from kalbert.io import atomic_write_json
from kalbert.pretrain.checkpoint import latest_checkpoint
from kalbert.pretrain.config import FREE_ON_RESUME
from kalbert.pretrain.curves import METRICS, truncate_metrics
from kalbert.pretrain.distributed import DistEnv
from kalbert.stage import complete_record

log = logging.getLogger(__name__)

class StopFlag:
    """Set by SIGINT/SIGTERM: the run stops after the current step, saves and exits cleanly."""

    def __init__(self) -> None:
        self.set = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopFlag:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.set:  # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        self.set = True

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def config_changes(recorded: dict, new: dict) -> list[str]:
    """What a resumed run would change of the numbers the recorded config computes, one line each.

    Fields the recorded config lacks (added to kalbert later) count as unchanged.
    """
    def walk(old: dict, now: dict, prefix: str) -> list[str]:
        out = []
        for key in sorted(old):
            a, b = old[key], now.get(key)
            if isinstance(a, dict) and isinstance(b, dict):
                out += walk(a, b, f"{prefix}{key}.")
            elif a != b:
                out.append(f"{prefix}{key}: {a!r} -> {b!r}")
        return out

    return walk({k: v for k, v in recorded.items() if k not in FREE_ON_RESUME}, new, "")


def prepare_run_folder(out: Path, config: dict, resume: bool, data_vocab_sha256: str, env: DistEnv,
                       overwrite: bool, command: str | None = None) -> tuple[dict, Path | None]:
    """Check (and start) the run folder; return its recorded metadata and the checkpoint to resume from, if any.

    The folder grows checkpoint by checkpoint (it is resumable, so not built atomically), but its record is
    complete from the start (:func:`kalbert.stage.complete_record`; ``command`` reproduces ``config``).

    Every process checks before any process writes (the first barrier), so all see the same state.
    """
    meta_path = out / META_FILE
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else None
    if out.exists() and any(out.iterdir()) and (meta is None or meta.get("kind") != Kind.PRETRAINING_RUN):
        raise KalbertError(f"{out} exists and is not a pretraining run folder", "choose another --out")
    if meta is not None and not overwrite:
        if not resume:
            raise KalbertError(f"{out} already holds a run", "pass --resume to continue it or --overwrite")
        changed = config_changes(meta["config"], config)
        if changed:
            raise KalbertError(f"--resume with a different config: {'; '.join(changed)}",
                               "resume with the original settings or start a new --out")
    env.barrier()
    if env.is_main:
        if meta is not None and overwrite:
            shutil.rmtree(out)
            meta = None
        if meta is None:  # a new run; a resumed one keeps its original command and config
            meta = {"kalbert_version": __version__, "kind": Kind.PRETRAINING_RUN, "command": invocation(),
                    "config": config, "data_vocab_sha256": data_vocab_sha256, "world_size": env.world_size,
                    "resumed_with": []}
            meta = complete_record(meta, Kind.PRETRAINING_RUN, [config["data"]], folder_languages(config["data"]),
                                   command)
        else:
            meta.setdefault("resumed_with", []).append(invocation() or "Python API")
        atomic_write_json(meta_path, meta)
    env.barrier()
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    checkpoint = latest_checkpoint(out) if resume else None
    if checkpoint is None and resume:
        log.warning("no intact checkpoint in %s: starting from scratch", out)
        if env.is_main:
            truncate_metrics(out / METRICS, -1)  # forget what a run that saved nothing logged
    return meta, checkpoint
