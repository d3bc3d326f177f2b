"""Operations on weight files: float16 storage for shipped models, and parameter-wise averages of models
fine-tuned from one starting point ("model soups", `kalbert sbert average` and `kalbert mc average`).

Shipped weights stored as float16 are half the size on disk (what keeps a shipped model under the repository's
40 MB) and are loaded and computed in float32, because config.json keeps ``dtype: float32``."""

from __future__ import annotations

from pathlib import Path

from kalbert.errors import KalbertError


def store_float16(folder: Path) -> None:
    """Rewrite every ``*.safetensors`` under ``folder`` with its floating-point tensors in float16."""
    from safetensors.torch import load_file, save_file

    for weights in folder.rglob("*.safetensors"):
        tensors = {name: t.half() if t.is_floating_point() else t for name, t in load_file(weights).items()}
        save_file(tensors, weights, metadata={"format": "pt"})


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

    files = sorted(p.relative_to(folders[0]) for p in folders[0].rglob("*.safetensors"))
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
