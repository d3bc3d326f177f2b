"""The stage contract: the one way a verb turns its work into an artifact folder.

A verb refuses an existing ``--out`` before hours of work (:func:`kalbert.io.refuse_existing_output`), then
builds inside :func:`artifact_folder` (a temp folder beside ``--out``), writes its ``kalbert.json`` with
:func:`write_record` and its README card, and the folder appears by rename only when the record is complete.
Each kind keeps its own fields; :func:`complete_record` adds the ones every record shares, so any folder
says what it is, which languages it serves, which folders it came from (with hashes), the command that
reproduces it and the machine that made it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from kalbert import __version__
from kalbert.artifact import META_FILE, MODULES_FILE, Kind, invocation, read_meta, write_meta
from kalbert.hardware import hardware_block
from kalbert.io import atomic_output_dir, sha256_file

COMMON_FIELDS = ("kind", "kalbert_version", "languages", "parents", "command", "hardware")
"""Keys every ``kalbert.json`` holds, whatever its kind."""

_RECIPE_STAGE: ContextVar[tuple[dict[str, Any], float] | None] = ContextVar("recipe_stage", default=None)
"""The recipe stage now running and when it started (:func:`recipe_stage`), recorded in every record written
meanwhile."""

# What identifies a parent that has no kalbert.json (a plain HF or SentenceTransformer folder), cheapest first.
_IDENTITY_FILES = ("config.json", "spiece.model", MODULES_FILE)


def parent(folder: str | Path) -> dict[str, Any]:
    """A folder this artifact was made from: its path, kind and a hash of its record (or of its
    ``config.json`` when it has none; ``None`` for a hub name), so a moved or rebuilt parent shows."""
    path = Path(folder).expanduser()
    hashed = next((name for name in (META_FILE, *_IDENTITY_FILES) if (path / name).is_file()), None)
    return {"path": str(folder), "kind": read_meta(path).get("kind"), "file": hashed,
            "sha256": sha256_file(path / hashed) if hashed else None}


def _languages(meta: dict[str, Any]) -> list[str]:
    if meta.get("languages"):
        return list(meta["languages"])
    return meta["language"].split("+") if isinstance(meta.get("language"), str) else []


def complete_record(meta: dict[str, Any], kind: Kind, parents: Iterable[str | Path] = (),
                    languages: list[str] | None = None, command: str | None = None) -> dict[str, Any]:
    """``meta`` with the common fields filled in; its own fields are kept.

    ``parents`` add to the ones a carried-over record already lists (a sentence model trained in several
    stages keeps naming the checkpoint it started from). ``command`` is the fallback reproducing command
    when kalbert is not running from its command line (``invocation()`` is None under the Python API).
    """
    record = dict(meta)
    record["kind"] = kind
    record["kalbert_version"] = __version__
    record["languages"] = list(languages) if languages else _languages(meta)
    known = list(meta.get("parents") or [])
    for folder in parents:
        entry = parent(folder)
        if entry not in known:
            known.append(entry)
    record["parents"] = known
    record["command"] = meta.get("command") or invocation() or command
    record["hardware"] = hardware_block()  # this build's machine, not a carried-over record's
    record.pop("recipe", None)  # a carried-over record's recipe made its parent, not this folder
    running = _RECIPE_STAGE.get()
    if running is not None:
        block, started = running
        record["recipe"] = {**block, "wall_seconds": round(time.monotonic() - started, 1)}
    return record


def write_record(folder: Path, meta: dict[str, Any], kind: Kind, parents: Iterable[str | Path] = (),
                 languages: list[str] | None = None, command: str | None = None) -> dict[str, Any]:
    """Complete ``meta`` (:func:`complete_record`), write it as ``folder/kalbert.json`` and return it, so the
    card is rendered from exactly what was recorded."""
    record = complete_record(meta, kind, parents, languages, command)
    write_meta(folder, record)
    return record


def missing_fields(folder: str | Path, kind: Kind) -> list[str]:
    """The common fields ``folder``'s record lacks (``kind`` too when it is another kind)."""
    meta = read_meta(folder)
    missing = [key for key in COMMON_FIELDS if key not in meta]
    return missing if meta.get("kind") == kind else ["kind", *missing]


@contextlib.contextmanager
def recipe_stage(block: dict[str, Any]) -> Iterator[None]:
    """Every record written inside carries ``block`` as its ``recipe`` field, in the same atomic write as the
    rest of the record, so a recipe stage's folder says which recipe and settings made it or nothing at all;
    ``wall_seconds`` beside it is the time from entering to that write: what the stage cost in the run that
    finished it (a stage resumed after a kill counts from the resume)."""
    token = _RECIPE_STAGE.set((block, time.monotonic()))
    try:
        yield
    finally:
        _RECIPE_STAGE.reset(token)


@contextlib.contextmanager
def artifact_folder(out: str | Path, kind: Kind, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temp folder to build ``out`` in; it replaces ``out`` only if it ends with a complete record
    of ``kind`` (a verb that forgot :func:`write_record` fails here rather than ship a mute folder)."""
    with atomic_output_dir(out, overwrite=overwrite) as tmp:
        yield tmp
        missing = missing_fields(tmp, kind)
        if missing:
            raise RuntimeError(f"internal error: the {kind} record of {out} lacks {', '.join(missing)}")
