"""Operations on weight files: float16 storage for shipped models, parameter-wise averages of models
fine-tuned from one starting point ("model soups", `kalbert sbert average` and `kalbert mc average`), the
hashes that tie a benchmark results file (and a search index) to the weights it used, and the check that
refuses a truncated file before a loader trips on it.

Shipped weights stored as float16 are half the size on disk (what keeps a shipped model under the repository's
40 MB) and are loaded and computed in float32, because config.json keeps ``dtype: float32``."""

from __future__ import annotations

import json
from pathlib import Path

from kalbert.errors import KalbertError
from kalbert.io import sha256_file

WEIGHT_FILES = "*.safetensors"
"""what holds a folder's weights (every kalbert folder, and every folder it ships, stores them so)"""


def store_float16(folder: Path) -> None:
    """Rewrite every ``*.safetensors`` under ``folder`` with its floating-point tensors in float16."""
    from safetensors.torch import load_file, save_file

    for weights in folder.rglob(WEIGHT_FILES):
        tensors = {name: t.half() if t.is_floating_point() else t for name, t in load_file(weights).items()}
        save_file(tensors, weights, metadata={"format": "pt"})


def weights_sha256(folder: str | Path) -> dict[str, str] | None:
    """The sha256 of each weight file under ``folder``, by its path relative to it: what a results file records,
    so a score names the weights it was made with (a folder's name stays while its weights change). None when
    ``folder`` is not a local folder with weights (a baseline's name, a hub id)."""
    folder = Path(folder).expanduser()
    files = sorted(folder.rglob(WEIGHT_FILES)) if folder.is_dir() else []
    return {path.relative_to(folder).as_posix(): sha256_file(path) for path in files} or None


def check_weight_files(folder: str | Path) -> None:
    """Refuse a truncated or damaged ``*.safetensors`` under ``folder`` in one line, from its header alone (no
    tensor is read), before a loader stops on it with a Rust traceback."""
    folder = Path(folder).expanduser()
    for path in sorted(folder.rglob(WEIGHT_FILES)) if folder.is_dir() else []:
        try:
            problem = _safetensors_problem(path)
        except OSError as exc:
            raise KalbertError(f"cannot read weights file {path} ({exc.strerror})",
                               "check its permissions, or copy the model folder again") from None
        if problem:
            raise KalbertError(f"weights file {path} is damaged: {problem}",
                               "copy the model folder again, or make it again")


def _safetensors_problem(path: Path) -> str | None:
    """What is wrong with a safetensors file's layout (an 8-byte header length, the JSON header, then exactly
    the bytes its tensors' offsets span), or None."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(8)
        length = int.from_bytes(head, "little") if len(head) == 8 else None
        if length is None or length > size - 8:
            return f"{size:,} bytes, cut short inside its header"
        try:
            header = json.loads(handle.read(length))
            end = max((int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__"), default=0)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError):
            return "its header is not a safetensors header"
    if 8 + length + end != size:
        return f"{size:,} bytes where its header describes {8 + length + end:,} (cut short or overwritten)"
    return None


def normalised_weights(models: list[str], weights: list[float]) -> list[float]:
    """One weight per model summing to 1 (equal weights when none are given); bad weights are refused."""
    if len(models) < 2:
        raise KalbertError("averaging needs at least two models", "pass --models A B [C ...]")
    if not weights:
        return [1.0 / len(models)] * len(models)
    if len(weights) != len(models):
        raise KalbertError(f"{len(weights)} weights for {len(models)} models",
                           "give one --weights value per model, or none for equal weights")
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise KalbertError("weights must be non-negative with a positive sum", "e.g. --weights 0.5 0.5")
    total = sum(weights)
    return [w / total for w in weights]


def average_state_dicts(state_dicts: list[dict], weights: list[float], names: list[str]) -> dict:
    """The weighted mean of each floating-point tensor, in float32; the tensors must match in name and shape."""
    reference = state_dicts[0]
    for state, name in zip(state_dicts[1:], names[1:], strict=True):
        if state.keys() != reference.keys():
            differing = sorted(state.keys() ^ reference.keys())
            raise KalbertError(f"{name} and {names[0]} differ in their weights ({differing[0]}, ...)",
                               "only models of the same architecture can be averaged")
        for key, tensor in state.items():
            if tensor.shape != reference[key].shape:
                raise KalbertError(f"{name} and {names[0]} differ in the shape of {key}",
                                   "only models of the same shape can be averaged")
    averaged = {}
    for key, tensor in reference.items():
        if tensor.is_floating_point():
            weighted = (w * state[key].float() for w, state in zip(weights, state_dicts, strict=True))
            averaged[key] = sum(weighted).contiguous()
        else:
            averaged[key] = tensor.clone()
    return averaged


def average_weight_files(folders: list[Path], weights: list[float], out: Path) -> list[Path]:
    """Write the weighted mean of every ``*.safetensors`` of ``folders[0]`` (found at the same place in each
    folder) under ``out``; returns the files written, relative to ``out``."""
    from safetensors.torch import load_file, save_file

    files = sorted(p.relative_to(folders[0]) for p in folders[0].rglob(WEIGHT_FILES))
    if not files:
        raise KalbertError(f"{folders[0]} has no .safetensors weights", "re-save it with its library")
    for relative in files:
        missing = [str(f) for f in folders if not (f / relative).is_file()]
        if missing:
            raise KalbertError(f"{missing[0]} has no {relative}", "only models of the same architecture "
                               "can be averaged")
        states = [load_file(f / relative) for f in folders]
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        save_file(average_state_dicts(states, weights, [str(f) for f in folders]), out / relative,
                  metadata={"format": "pt"})
    return files
