"""Atomic checkpoints that survive ``kill -9``, keep the last K, and fall back past a damaged one.

A checkpoint ``checkpoints/step-0000100/`` holds the model (``save_pretrained``: config.json +
model.safetensors, so it is itself an HF folder), ``trainer_state.pt`` (optimiser, scheduler, RNG
states, data position) and last ``manifest.json`` (size and sha256 of every file). It is written
under a temp name, fsynced, renamed into place, and only then does the ``latest`` pointer file move
(itself atomically). A kill at any moment leaves either the old state or the new one; loading
verifies the manifest and walks back to the newest complete checkpoint if the latest is damaged.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from pathlib import Path

import torch

from kalbert.io import atomic_write_json, atomic_write_text, sha256_file, temp_folder_beside

log = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
LATEST = "latest"
MANIFEST = "manifest.json"
TRAINER_STATE = "trainer_state.pt"
_NAME = re.compile(r"^step-(\d+)$")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def checkpoint_dirs(run_dir: Path) -> list[Path]:
    """Checkpoint folders (complete or not) by step, newest first; temp folders are not listed."""
    root = Path(run_dir) / CHECKPOINTS
    found = [p for p in root.iterdir() if p.is_dir() and _NAME.match(p.name)] if root.is_dir() else []
    return sorted(found, key=lambda p: int(_NAME.match(p.name).group(1)), reverse=True)


def checkpoint_step(path: Path) -> int:
    return int(_NAME.match(path.name).group(1))


def save_checkpoint(run_dir: Path, step: int, model, trainer_state: dict, keep: int) -> Path:
    """Write checkpoint ``step`` atomically, point ``latest`` at it, and delete all but the last ``keep``."""
    root = Path(run_dir) / CHECKPOINTS
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:07d}"
    tmp = temp_folder_beside(final)
    try:
        model.save_pretrained(tmp)
        torch.save(trainer_state, tmp / TRAINER_STATE)
        files = {p.name: {"bytes": p.stat().st_size, "sha256": sha256_file(p)} for p in sorted(tmp.iterdir())}
        for name in files:
            _fsync(tmp / name)
        atomic_write_json(tmp / MANIFEST, {"step": step, "files": files})
        if final.exists():  # the same step saved again (e.g. after an interrupt at a checkpoint step)
            shutil.rmtree(final)
        os.replace(tmp, final)
        _fsync(root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    atomic_write_text(root / LATEST, final.name + "\n")
    for old in checkpoint_dirs(run_dir)[keep:]:
        shutil.rmtree(old, ignore_errors=True)
    for partial in root.glob(".step-*.partial"):  # left by a killed run
        shutil.rmtree(partial, ignore_errors=True)
    return final


def verify_checkpoint(path: Path) -> str | None:
    """None if ``path`` is complete and intact, else what is wrong with it."""
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
        for name, expected in manifest["files"].items():
            file = path / name
            if not file.exists():
                return f"{name} is missing"
            if file.stat().st_size != expected["bytes"] or sha256_file(file) != expected["sha256"]:
                return f"{name} is damaged (size or checksum differs)"
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"no readable {MANIFEST} ({exc.__class__.__name__})"
    return None


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest intact checkpoint: the one ``latest`` names, else the newest that verifies."""
    root = Path(run_dir) / CHECKPOINTS
    candidates = checkpoint_dirs(run_dir)
    try:
        named = root / (root / LATEST).read_text(encoding="utf-8").strip()
        candidates = [named] + [c for c in candidates if c != named and checkpoint_step(c) < checkpoint_step(named)]
    except (OSError, AttributeError):
        pass
    for candidate in candidates:
        problem = verify_checkpoint(candidate)
        if problem is None:
            return candidate
        log.warning("checkpoint %s is unusable (%s); trying the one before", candidate, problem)
    return None


def load_trainer_state(path: Path) -> dict:
    """The trainer state of a verified checkpoint (our own file, checked against its manifest)."""
    return torch.load(path / TRAINER_STATE, map_location="cpu", weights_only=False)
